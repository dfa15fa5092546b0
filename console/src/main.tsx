import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { createQueryClient } from './app/query-client.js';
import { applyInitialTheme } from './app/theme.js';
import './styles/app.css';

applyInitialTheme();
const queryClient = createQueryClient();
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
