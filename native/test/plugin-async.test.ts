import assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { binding } from '../lib/binding.js';
import { PluginLoadError, resolvePlugin, Runtime } from '../lib/index.js';

// Its own file, so its own process: the first load of the plugin is this test's, not a cached one.
suite('the plugin loads off the JS thread', () => {
  test('loadPluginAsync: the JS thread runs on while the plugin loads; the same facts as loadPlugin', async () => {
    const path = resolvePlugin('cpu');
    let immediate = false;
    setImmediate(() => (immediate = true));
    const loading = binding().loadPluginAsync(path);
    assert.ok(loading instanceof Promise);
    const info = await loading;
    assert.ok(immediate, 'the event loop turned while the plugin loaded');
    assert.deepEqual(binding().loadPlugin(path), info);
    assert.equal(info.path, path);
    assert.ok(info.apiVersion[0] === 0 && info.apiVersion[1] > 0);
  });

  test('EXPECTED FAILURE - loadPluginAsync rejects a file that is no plugin, and the process lives on', async () => {
    await assert.rejects(binding().loadPluginAsync('/lib/x86_64-linux-gnu/libc.so.6'), /exports no GetPjrtApi/);
    await assert.rejects(binding().loadPluginAsync('/nonexistent/plugin.so'), /cannot load PJRT plugin/);
  });

  test('EXPECTED FAILURE - Runtime.preload never throws; create() reports what the preload met, and uses a good one', async () => {
    Runtime.preload('/nonexistent/plugin.so');
    Runtime.preload('/lib/x86_64-linux-gnu/libc.so.6');
    await assert.rejects(
      Runtime.create({ plugin: '/lib/x86_64-linux-gnu/libc.so.6' }),
      (e: unknown) => e instanceof PluginLoadError && /exports no GetPjrtApi/.test(e.message),
    );
    await assert.rejects(Runtime.create({ plugin: '/nonexistent/plugin.so' }), PluginLoadError);
    Runtime.preload('cpu');
    const rt = await Runtime.create({ plugin: 'cpu' });
    assert.equal(rt.platformName, 'cpu');
    rt.dispose();
  });
});
