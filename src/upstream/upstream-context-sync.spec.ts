import { Logger } from '@nestjs/common';
import { ContextCatalogueService } from '../core/context/context-catalogue.service';
import { UpstreamCallers } from './upstream-callers';
import type { UpstreamClient } from './upstream-client';
import { UpstreamContextSync } from './upstream-context-sync';
import type { UpstreamServerConfig } from './upstream-servers.config';

const server: UpstreamServerConfig = {
  name: 'up',
  prefix: 'up.',
  disabled: false,
  connectTimeoutMs: 1000,
  callTimeoutMs: 1000,
  transport: 'stdio',
  command: 'node',
  args: [],
  env: {},
};

/** An upstream client whose `resources/list` answers are held until released, and whose notifications the test sends. */
function fakeClient() {
  const handlers = new Map<string, () => void>();
  const lists: { uris: string[]; release: () => void }[] = [];
  let resources = ['one://a'];
  const client = {
    getServerCapabilities: () => ({ resources: { listChanged: true } }),
    setNotificationHandler: (method: string, handler: () => void) => handlers.set(method, handler),
    listResources: () =>
      new Promise((resolve) => {
        const uris = resources;
        lists.push({ uris, release: () => resolve({ resources: uris.map((uri) => ({ uri, name: uri })) }) });
      }),
    listResourceTemplates: async () => ({ resourceTemplates: [] }),
  };
  return {
    client: client as unknown as UpstreamClient,
    lists,
    notify: (method: string) => handlers.get(method)?.(),
    offer: (uris: string[]) => (resources = uris),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('UpstreamContextSync', () => {
  it('reads the resources again when they change while they are first read', async () => {
    const { client, lists, notify, offer } = fakeClient();
    const state: { connected?: UpstreamClient } = {};
    const catalogue = new ContextCatalogueService();
    const link = { connectedClient: () => state.connected, lost: () => undefined, checkAlive: async () => undefined };
    const sync = new UpstreamContextSync(server, 0, catalogue, link, new Logger('spec'), (text) => text, new UpstreamCallers());

    sync.listen(client);
    const loading = sync.load(client);
    await settle();
    // The list changes at the upstream after it answered the first read, before the gateway counts it connected.
    offer(['one://a', 'two://b']);
    notify('notifications/resources/list_changed');
    lists[0].release();
    await loading;
    state.connected = client;
    sync.connected(client);
    expect(catalogue.listResources(undefined).map((resource) => resource.uri)).toEqual(['one://a']);

    await settle();
    expect(lists).toHaveLength(2);
    lists[1].release();
    await settle();
    expect(catalogue.listResources(undefined).map((resource) => resource.uri)).toEqual(['one://a', 'two://b']);
  });
});
