// The top of the console: the entry point (main.tsx) and the routes and shell (App.tsx), in a folder of their own
// so that the modules every page imports (api, session, ui, forms) sit below the pages and never import them.
import '@mantine/core/styles.css';
import '@mantine/charts/styles.css';
import { MantineProvider, createTheme } from '@mantine/core';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter } from 'react-router';
import { App } from './App';

// `respectReducedMotion`: a person whose system asks for reduced motion gets dialogs, menus and accordions without
// their transitions (WCAG 2.3.3); the browser tests ask for it too (decision 0570).
const theme = createTheme({ primaryColor: 'indigo', defaultRadius: 'md', respectReducedMotion: true });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme}>
      <BrowserRouter basename="/console">
        <App />
      </BrowserRouter>
    </MantineProvider>
  </StrictMode>,
);
