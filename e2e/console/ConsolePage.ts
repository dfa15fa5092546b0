/** Page objects of the console: what a person looks at and does, named once for every spec. */
import { expect, type Locator, type Page } from '@playwright/test';

export class ConsolePage {
  constructor(
    readonly page: Page,
    readonly baseUrl: string,
  ) {}

  async open(path = '/', token?: string): Promise<void> {
    if (token) {
      await this.page.addInitScript((t) => localStorage.setItem('hloserve.token', t), token);
    }
    await this.page.goto(this.baseUrl + path);
  }

  /** Moves to another screen inside the loaded console (no reload, the feed stays connected). */
  async go(path: string): Promise<void> {
    await this.page.evaluate((to) => {
      history.pushState(null, '', to);
      dispatchEvent(new PopStateEvent('popstate'));
    }, path);
  }

  banner(): Locator {
    return this.page.getByTestId('connection-banner');
  }

  async expectLive(): Promise<void> {
    await expect(this.banner()).toHaveAttribute('data-state', /live|resynced/);
  }

  nav(label: string): Locator {
    return this.page.getByRole('navigation', { name: 'screens' }).getByRole('link', { name: label });
  }

  /** Buttons that change something: a viewer must see none of them. */
  mutateControls(): Locator {
    return this.page.locator(
      '[data-testid^="action-"], [data-testid="bulk-bar"], [data-testid="memory-block"], [data-testid="policy-review"], [data-testid="create-token"], [data-testid="dropzone"], [data-testid="upload-start"], input[aria-label^="select"]',
    );
  }
}

export class SetupPage {
  constructor(readonly page: Page) {}
  tokenInput(): Locator {
    return this.page.getByTestId('token-input');
  }
  async submit(): Promise<void> {
    await this.page.getByTestId('submit').click();
  }
  adminToken(): Locator {
    return this.page.getByTestId('admin-token');
  }
  async continue(): Promise<void> {
    await this.page.getByTestId('continue').click();
  }
}

export class ModelsPage {
  constructor(readonly page: Page) {}
  search(): Locator {
    return this.page.getByTestId('model-search');
  }
  rowCount(): Locator {
    return this.page.getByTestId('row-count');
  }
  rows(): Locator {
    return this.page.getByTestId('model-row');
  }
  scroller(): Locator {
    return this.page.getByTestId('model-scroller');
  }
  /** A model's "Last used" cell (the row's last). */
  lastUsed(name: string): Locator {
    return this.rows()
      .filter({ has: this.page.getByRole('link', { name, exact: true }) })
      .getByRole('cell')
      .last();
  }
}

/** One model's page: its actions, the residency summary, and the tabs. */
export class ModelDetailPage {
  constructor(readonly page: Page) {}
  actions(): Locator {
    return this.page.getByTestId('model-actions');
  }
  async pinOnDevice(): Promise<void> {
    await this.page.getByTestId('action-pin').click();
  }
  action(name: 'load' | 'unload' | 'reload' | 'drain' | 'resume'): Locator {
    return this.page.getByTestId(`action-${name}`);
  }
  /** The drain badge in the summary: "drained", or "draining (n pending)". */
  drained(): Locator {
    return this.page.getByTestId('model-drained');
  }
  async tab(name: 'Overview' | 'Performance' | 'Residency' | 'Policy' | 'Try it'): Promise<Locator> {
    await this.page.getByRole('tab', { name }).click();
    return this.page.getByRole('tabpanel', { name });
  }
  /** The residency timeline's rows (Residency tab): event kind and its details with the reason. */
  timelineRows(): Locator {
    return this.page.getByRole('tabpanel', { name: 'Residency' }).locator('tbody tr');
  }
}

/** The memory map: per device, pinned blocks apart from the evictable ones. */
export class MemoryMapPage {
  constructor(readonly page: Page) {}
  pinnedBlock(model: string): Locator {
    return this.page.locator('.memmap .block.pinned').filter({ hasText: model });
  }
  residentBlocks(): Locator {
    return this.page.getByTestId('resident-blocks');
  }
}
