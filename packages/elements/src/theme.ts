// The look every component shares: the theme's CSS custom properties (`--offerkit-*`) with their defaults, and the
// classes the components have in common (buttons, cards, errors, the visually hidden label).
import { css } from 'lit';

export const baseStyles = css`
  :host {
    --_accent: var(--offerkit-accent, #4f46e5);
    --_accent-text: var(--offerkit-accent-text, #ffffff);
    --_text: var(--offerkit-text, #1f2937);
    --_muted: var(--offerkit-muted, #5b6472);
    --_bg: var(--offerkit-background, #ffffff);
    --_surface: var(--offerkit-surface, #f6f7f9);
    --_border: var(--offerkit-border, #d9dce3);
    --_danger: var(--offerkit-danger, #b42318);
    --_success: var(--offerkit-success, #067647);
    --_radius: var(--offerkit-radius, 10px);
    --_font: var(--offerkit-font, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif);
    /* A solid ring outside the control, in the accent (4.5:1 or better against white with the default accent): set
       --offerkit-focus-color to one at 3:1 or better against your background when your accent is light. */
    --_focus-color: var(--offerkit-focus-color, var(--_accent));
    --_focus: var(--offerkit-focus-ring, none);
    display: block;
    box-sizing: border-box;
    font-family: var(--_font);
    color: var(--_text);
    line-height: 1.45;
  }
  *,
  *::before,
  *::after {
    box-sizing: inherit;
  }
  [hidden] {
    display: none !important;
  }
  .card {
    background: var(--_bg);
    border: 1px solid var(--_border);
    border-radius: var(--_radius);
    padding: 1.25rem;
  }
  h2,
  h3 {
    margin: 0 0 0.5rem;
    line-height: 1.25;
  }
  h2 {
    font-size: 1.25rem;
  }
  h3 {
    font-size: 1.05rem;
  }
  p {
    margin: 0 0 0.75rem;
  }
  .muted {
    color: var(--_muted);
  }
  button,
  .button {
    font: inherit;
    font-weight: 600;
    border-radius: calc(var(--_radius) * 0.7);
    padding: 0.6rem 1rem;
    min-height: 44px;
    border: 1px solid var(--_border);
    background: var(--_bg);
    color: var(--_text);
    cursor: pointer;
    text-decoration: none;
    display: inline-flex;
    align-items: center;
    justify-content: center;
  }
  button.primary,
  .button.primary {
    background: var(--_accent);
    border-color: var(--_accent);
    color: var(--_accent-text);
  }
  button.danger {
    background: var(--_danger);
    border-color: var(--_danger);
    color: #fff;
  }
  button.link {
    border-color: transparent;
    background: transparent;
    color: var(--_accent);
    padding-inline: 0.25rem;
  }
  button:disabled {
    opacity: 0.6;
    cursor: progress;
  }
  button:focus-visible,
  .button:focus-visible,
  input:focus-visible,
  textarea:focus-visible,
  [tabindex]:focus-visible {
    outline: 2px solid var(--_focus-color);
    outline-offset: 2px;
    box-shadow: var(--_focus);
  }
  .actions {
    display: flex;
    flex-wrap: wrap;
    gap: 0.5rem;
    margin-top: 1rem;
    align-items: center;
  }
  .error {
    color: var(--_danger);
    margin-top: 0.75rem;
  }
  .visually-hidden {
    position: absolute;
    width: 1px;
    height: 1px;
    overflow: hidden;
    clip: rect(0 0 0 0);
    white-space: nowrap;
  }
`;
