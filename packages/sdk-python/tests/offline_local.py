"""The offline scenario's client, one run per life of the client process (test/sdk/python-local.test.ts drives it).

`python offline_local.py before <buffer file>`: reads `ada`, says `loaded`, waits for `stopped` on stdin (the API is
down), then checks and tracks from memory and prints what it saw as JSON. `python offline_local.py after <buffer
file>`: a new process on the same file (the client restarted while the API is still down): tracks once more, says
`buffered`, waits for `started` (the API is back), flushes and prints what the API counted.

Not a pytest module (its name does not start with `test_`): it needs the API process stopped and started between
its steps, which only the mocha file can do. Environment: OFFERKIT_BASE_URL, OFFERKIT_APP_ID, OFFERKIT_SECRET_KEY.
"""

from __future__ import annotations

import json
import os
import sys
import time

from offerkit import SecretClient


def wait_for(word: str) -> None:
    print(word, flush=True)
    line = sys.stdin.readline().strip()
    if line != {"loaded": "stopped", "buffered": "started"}[word]:
        raise SystemExit(f"expected the driver's answer to {word}, got {line!r}")


def before(client: SecretClient, file: str) -> dict[str, object]:
    with client.local(buffer_file=file, unknown={"calls": True}) as local:
        local.ready()
        local.load("ada")
        wait_for("loaded")
        # The API is down: answers from memory for the account it knew, the policy for one it never saw.
        for _ in range(5):
            local.track("ada", "calls", 2)
        seen = {
            "ada_calls": local.can("ada", "calls"),
            "ada_sso": local.can("ada", "sso"),
            "zed_calls": local.can("zed", "calls"),
            "zed_sso": local.can("zed", "sso"),
        }
        access = local.access("ada")
        time.sleep(0.5)  # the sender has tried (and failed) meanwhile
        return {
            **seen,
            "usage": access.entitlements[0].usage if access else None,
            "pending": local.pending,
            "stale": local.staleness() > 0,
        }


def after(client: SecretClient, file: str) -> dict[str, object]:
    with client.local(buffer_file=file) as local:
        restored = local.pending
        local.track("ada", "calls", 1)
        wait_for("buffered")
        local.flush(60)
        return {"restored": restored, "count": client.usage.get("ada", "calls").count}


def main() -> None:
    step, file = sys.argv[1], sys.argv[2]
    env = os.environ
    with SecretClient(
        secret_key=env["OFFERKIT_SECRET_KEY"], app_id=env["OFFERKIT_APP_ID"], base_url=env["OFFERKIT_BASE_URL"]
    ) as client:
        result = before(client, file) if step == "before" else after(client, file)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
