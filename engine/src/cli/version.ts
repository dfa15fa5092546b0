import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// From engine/dist/src/cli/: the install's root package.json and native's plugin pins.
const rootPackage = fileURLToPath(new URL('../../../../package.json', import.meta.url));
const pluginPins = fileURLToPath(new URL('../../../../native/plugins.json', import.meta.url));

/** `hloserve version`: what is installed, for bug reports and upgrades. */
export function versionText(): string {
  const { version } = JSON.parse(readFileSync(rootPackage, 'utf8')) as { version: string };
  const pins = JSON.parse(readFileSync(pluginPins, 'utf8')) as Record<
    string,
    { package: string; version: string; pjrtApi: string }
  >;
  const cpu = pins['cpu']!;
  return [
    `hloserve ${version}`,
    `node ${process.versions.node}`,
    `cpu plugin ${cpu.package} ${cpu.version} (PJRT C API ${cpu.pjrtApi})`,
  ].join('\n');
}
