// The pricing table's look (after the shared theme, theme.ts): the plan cards, the interval switch, the order bumps,
// the confirm step and the pending change, and their narrow-screen layout.
import { css } from 'lit';
import { baseStyles } from './theme.js';

export const pricingTableStyles = [
  baseStyles,
  css`
    .plans {
      display: grid;
      grid-template-columns: repeat(auto-fit, minmax(14rem, 1fr));
      gap: 1rem;
    }
    .plan {
      display: flex;
      flex-direction: column;
    }
    .plan ul {
      padding-left: 1.1rem;
      margin: 0.5rem 0 1rem;
      flex: 1;
    }
    .plan button {
      width: 100%;
    }
    .confirm {
      margin-top: 0.75rem;
      padding: 0.75rem;
      border: 1px solid var(--offerkit-border, #d0d5dd);
      border-radius: var(--offerkit-radius, 8px);
      background: var(--offerkit-muted-bg, #f8f9fb);
    }
    .confirm p {
      margin: 0 0 0.5rem;
    }
    .confirm .actions {
      display: flex;
      gap: 0.5rem;
      flex-wrap: wrap;
    }
    .confirm .actions button {
      width: auto;
      flex: 1 1 8rem;
    }
    .price {
      font-size: 1.1rem;
      margin-bottom: 0.25rem;
    }
    .price strong {
      font-size: 1.8rem;
    }
    .price s {
      margin-left: 0.5rem;
    }
    .small {
      font-size: 0.85rem;
    }
    .extra {
      font-size: 0.75rem;
      font-weight: 600;
      color: var(--_success);
      text-transform: uppercase;
      margin-left: 0.25rem;
    }
    .intervals {
      display: inline-flex;
      border: 1px solid var(--_border);
      border-radius: 999px;
      padding: 3px;
      margin-bottom: 1rem;
    }
    .interval {
      position: relative;
    }
    .interval input {
      position: absolute;
      opacity: 0;
      inset: 0;
      margin: 0;
      cursor: pointer;
    }
    .interval span {
      display: block;
      padding: 0.45rem 1rem;
      border-radius: 999px;
      min-height: 36px;
      font-weight: 600;
    }
    .interval input:checked + span {
      background: var(--_accent);
      color: var(--_accent-text);
    }
    .interval input:focus-visible + span {
      outline: 2px solid var(--_focus-color);
      outline-offset: 2px;
      box-shadow: var(--_focus);
    }
    .bumps {
      margin-top: 1rem;
      border: 1px solid var(--_border);
      border-radius: var(--_radius);
      padding: 0.75rem 1rem;
    }
    .bump {
      display: flex;
      gap: 0.5rem;
      align-items: center;
      min-height: 44px;
    }
    .badge {
      font-size: 0.75rem;
      font-weight: 600;
      border-radius: 999px;
      padding: 0.1rem 0.5rem;
      margin-left: 0.35rem;
      vertical-align: middle;
      background: color-mix(in srgb, var(--_accent) 12%, transparent);
      color: var(--_accent);
      white-space: nowrap;
    }
    .plan.current {
      border-color: var(--_accent);
      border-width: 2px;
    }
    .pending {
      background: var(--_surface);
      border-left: 3px solid var(--_accent);
      padding: 0.5rem 0.75rem;
      border-radius: 4px;
    }
    .loading {
      color: var(--_muted);
    }
    .ghost {
      min-height: 14rem;
      background: linear-gradient(90deg, var(--_surface) 30%, var(--_bg) 50%, var(--_surface) 70%);
      background-size: 300% 100%;
      animation: shimmer 1.4s linear infinite;
    }
    @keyframes shimmer {
      from {
        background-position: 100% 0;
      }
      to {
        background-position: 0 0;
      }
    }
    @media (prefers-reduced-motion: reduce) {
      .ghost {
        animation: none;
      }
    }
    .status:empty,
    .error:empty {
      display: none;
    }
    .status {
      color: var(--_success);
      font-weight: 600;
    }
  `,
];
