import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite, test } from 'node:test';
import { cacheDir, PluginLoadError, pluginDir, resolvePlugin, Runtime } from '../lib/index.js';

suite('plugin resolution and loading', () => {
  test('the pinned CPU plugin resolves to an existing file', () => {
    assert.match(resolvePlugin('cpu'), /lammps-jax-pjrt-cpu-0\.11\.2\/.*pjrt_c_api_cpu_plugin\.so$/);
  });

  test('a fresh state directory (HLOSERVE_CACHE_DIR) keeps the installed plugin', () => {
    const installed = resolvePlugin('cpu');
    const saved = process.env.HLOSERVE_CACHE_DIR;
    const fresh = mkdtempSync(join(tmpdir(), 'hlo-fresh-state-'));
    process.env.HLOSERVE_CACHE_DIR = fresh;
    try {
      assert.equal(resolvePlugin('cpu'), installed);
    } finally {
      if (saved === undefined) delete process.env.HLOSERVE_CACHE_DIR;
      else process.env.HLOSERVE_CACHE_DIR = saved;
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  test('HLOSERVE_CACHE_DIR and HLOSERVE_PLUGIN_DIR set but empty count as unset, not as the working directory', () => {
    const saved = [process.env.HLOSERVE_CACHE_DIR, process.env.HLOSERVE_PLUGIN_DIR] as const;
    const defaults = (() => {
      delete process.env.HLOSERVE_CACHE_DIR;
      delete process.env.HLOSERVE_PLUGIN_DIR;
      return [cacheDir(), pluginDir()];
    })();
    process.env.HLOSERVE_CACHE_DIR = '';
    process.env.HLOSERVE_PLUGIN_DIR = '';
    try {
      assert.deepEqual([cacheDir(), pluginDir()], defaults);
      assert.notEqual(cacheDir(), process.cwd());
    } finally {
      for (const [k, v] of [
        ['HLOSERVE_CACHE_DIR', saved[0]],
        ['HLOSERVE_PLUGIN_DIR', saved[1]],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test('EXPECTED FAILURE - a missing plugin says what to run', () => {
    const saved = process.env.HLOSERVE_PLUGIN_DIR;
    const empty = mkdtempSync(join(tmpdir(), 'hlo-empty-plugins-'));
    process.env.HLOSERVE_PLUGIN_DIR = empty;
    try {
      assert.throws(
        () => resolvePlugin('cpu'),
        (e: unknown) => e instanceof PluginLoadError && /run 'npm install'/.test(e.message),
      );
    } finally {
      if (saved === undefined) delete process.env.HLOSERVE_PLUGIN_DIR;
      else process.env.HLOSERVE_PLUGIN_DIR = saved;
      rmSync(empty, { recursive: true, force: true });
    }
    assert.throws(() => resolvePlugin('/nonexistent/plugin.so'), PluginLoadError);
  });

  test('EXPECTED FAILURE - a file that is not a PJRT plugin is refused, the process lives on', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'hlo-bad-plugin-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const notElf = join(dir, 'broken.so');
    writeFileSync(notElf, 'this is not a shared library');
    await assert.rejects(
      Runtime.create({ plugin: notElf }),
      (e: unknown) => e instanceof PluginLoadError && /cannot load PJRT plugin/.test(e.message),
    );
    // libc is a real shared library without GetPjrtApi.
    await assert.rejects(Runtime.create({ plugin: '/lib/x86_64-linux-gnu/libc.so.6' }), /exports no GetPjrtApi/);
    const rt = await Runtime.create();
    assert.equal(rt.platformName, 'cpu');
    rt.dispose();
  });
});
