/** Page objects of the model detail's tabs, the upload screen and the queues screen. */
import { expect, type Locator, type Page } from '@playwright/test';

export class UploadPage {
  constructor(readonly page: Page) {}
  async choose(archive: string): Promise<void> {
    await this.page.locator('input[type="file"]').setInputFiles(archive);
  }
  modelName(): Locator {
    return this.page.getByTestId('upload-model');
  }
  progress(): Locator {
    return this.page.getByTestId('upload-progress');
  }
  /** Records every value the progress's data-step takes from now on (read with stepsSeen). */
  async watchSteps(): Promise<void> {
    await this.page.evaluate(() => {
      const w = window as unknown as { stepsSeen: string[] };
      w.stepsSeen = [];
      const push = (s: string | null | undefined) => {
        if (s && w.stepsSeen[w.stepsSeen.length - 1] !== s) w.stepsSeen.push(s);
      };
      // Observer callbacks come batched: a step that lasted less than one batch is read from the
      // attribute's old value, so none is missed.
      new MutationObserver((records) => {
        for (const r of records) if (r.type === 'attributes') push(r.oldValue);
        push(document.querySelector('[data-testid="upload-progress"]')?.getAttribute('data-step'));
      }).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeOldValue: true,
        attributeFilter: ['data-step'],
      });
    });
  }
  async stepsSeen(): Promise<string[]> {
    return this.page.evaluate(() => (window as unknown as { stepsSeen: string[] }).stepsSeen);
  }
  async start(): Promise<void> {
    await this.page.getByTestId('upload-start').click();
  }
}

export class ModelDetailPage {
  constructor(readonly page: Page) {}
  async tab(name: 'Overview' | 'Performance' | 'Residency' | 'Policy' | 'Versions' | 'Try it'): Promise<void> {
    await this.page.getByRole('tab', { name, exact: true }).click();
    await expect(this.page.getByRole('tabpanel', { name })).toBeVisible();
  }
  inputs(): Locator {
    return this.page.getByTestId('io-inputs');
  }
  tryButton(): Locator {
    return this.page.getByTestId('action-try');
  }
  tryResult(): Locator {
    return this.page.getByTestId('try-result');
  }
  tryVerdict(): Locator {
    return this.page.getByTestId('try-verdict');
  }
  tryOutputs(): Locator {
    return this.page.getByTestId('try-outputs');
  }
  curl(): Locator {
    return this.page.getByTestId('curl-snippet');
  }
  versionRows(): Locator {
    return this.page.getByTestId('version-row');
  }
  latencyHistogram(): Locator {
    return this.page.getByTestId('latency-histogram');
  }
  batchHistogram(): Locator {
    return this.page.getByTestId('batch-histogram');
  }
}

export class QueuesPage {
  constructor(readonly page: Page) {}
  discipline(): Locator {
    return this.page.getByTestId('discipline');
  }
  rows(): Locator {
    return this.page.getByTestId('queue-row');
  }
  row(model: string): Locator {
    return this.rows().filter({ has: this.page.getByRole('link', { name: model, exact: true }) });
  }
  search(): Locator {
    return this.page.getByTestId('queue-search');
  }
  shareChart(): Locator {
    return this.page.getByRole('img', { name: 'device time share and weight share, percent' });
  }
}
