import re, os, sys
moved = {
 'presentAccount':'src/accounts/accounts.present.ts','presentAccountDetail':'src/accounts/accounts.present.ts',
 'presentReport':'src/analytics/analytics.present.ts','presentApp':'src/apps/apps.present.ts','planChangePolicyOf':'src/apps/apps.present.ts',
 'presentFlow':'src/cancel-flows/cancel-flows.present.ts',
 'presentPricingCard':'src/catalog/catalog.present.ts','presentPlan':'src/catalog/catalog.present.ts','presentEntitlement':'src/catalog/catalog.present.ts','presentAddon':'src/catalog/catalog.present.ts','presentIncentive':'src/catalog/catalog.present.ts','Limit':'src/catalog/catalog.present.ts',
 'presentCheckout':'src/checkouts/checkouts.present.ts','presentEvent':'src/events/events.present.ts',
 'presentOffer':'src/offers/offers.present.ts','liveStatus':'src/offers/offers.present.ts','LiveStatus':'src/offers/offers.present.ts',
 'presentConnection':'src/payments/payments.present.ts','presentSubscription':'src/subscriptions/subscriptions.present.ts','presentUntracked':'src/subscriptions/subscriptions.present.ts',
 'presentDelivery':'src/webhooks/webhooks.present.ts','presentEndpoint':'src/webhooks/webhooks.present.ts','Stats':'src/webhooks/webhooks.present.ts',
}
sources = {'src/accounts/accounts.service.ts','src/analytics/analytics.service.ts','src/apps/apps.service.ts','src/cancel-flows/flows.service.ts','src/catalog/catalog.service.ts','src/checkouts/checkouts.service.ts','src/events/events.service.ts','src/offers/offers.service.ts','src/payments/payments.service.ts','src/subscriptions/subscriptions.service.ts','src/subscriptions/untracked.service.ts','src/webhooks/deliveries.service.ts','src/webhooks/endpoints.service.ts'}
root=os.getcwd()
files=[]
for r in ['src','activities','test','scripts','bench','workflows']:
    for d,_,fs in os.walk(r):
        if 'node_modules' in d: continue
        files += [os.path.join(d,f) for f in fs if f.endswith('.ts')]
imp = re.compile(r"^import (type )?\{([^}]*)\} from '(\.[^']+)';\n", re.M)
for f in files:
    s=open(f).read(); changed=False
    def repl(m):
        global changed
        typ, names, spec = m.group(1) or '', m.group(2), m.group(3)
        target = os.path.normpath(os.path.join(os.path.dirname(f), spec)).replace('.js','.ts')
        if target not in sources: return m.group(0)
        parts=[p.strip() for p in names.split(',') if p.strip()]
        keep=[]; move={}
        for p in parts:
            nm=re.sub(r'^type ','',p).split(' as ')[0].strip()
            if nm in moved:
                move.setdefault(moved[nm],[]).append(p)
            else: keep.append(p)
        if not move: return m.group(0)
        out=''
        if keep: out+=f"import {typ}{{ {', '.join(keep)} }} from '{spec}';\n"
        for dst,ps in move.items():
            if os.path.normpath(dst)==os.path.normpath(f): continue
            rel=os.path.relpath(dst, os.path.dirname(f)).replace('.ts','.js')
            if not rel.startswith('.'): rel='./'+rel
            out+=f"import {typ}{{ {', '.join(ps)} }} from '{rel}';\n"
        return out
    s2=imp.sub(repl,s)
    if s2!=s: open(f,'w').write(s2); print('rewrote',f)
