import { mkdtempSync, utimesSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { loadGatewayConfig } from '../../config/gateway-config';
import { CharacterCatalogueService } from './character-catalogue.service';

describe('CharacterCatalogueService', () => {
  const fileWith = (content: unknown) => {
    const file = join(mkdtempSync(join(tmpdir(), 'characters-')), 'characters.json');
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };
  const catalogue = (file?: string) => {
    const service = new CharacterCatalogueService(loadGatewayConfig(file ? { ROLEPLAY_CHARACTERS_FILE: file } : {}));
    service.onModuleInit();
    return service;
  };

  it('loads the shipped characters', () => {
    const names = catalogue()
      .list()
      .map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(['pirate_captain', 'detective', 'grandma', 'li_bai', 'space_guide']));
  });

  it('finds a character by name or display name, in any case', () => {
    const service = catalogue();
    expect(service.find('PIRATE_CAPTAIN')?.name).toBe('pirate_captain');
    expect(service.find('李白')?.name).toBe('li_bai');
    expect(service.find('nobody')).toBeUndefined();
  });

  it.each([
    ['not JSON', '{', /JSON/],
    ['no list', { characters: 'none' }, /characters must be an array/],
    ['a character without a prompt', { characters: [{ name: 'a', description: 'b' }] }, /prompt/],
    ['a bad name', { characters: [{ name: 'a b', description: 'b', prompt: 'c' }] }, /name must be/],
    ['a name twice', { characters: [1, 2].map(() => ({ name: 'a', description: 'b', prompt: 'c' })) }, /listed twice/],
  ])('refuses a file with %s at boot, naming the file', (_name, content, reason) => {
    const file = fileWith(content);
    expect(() => catalogue(file)).toThrow(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    expect(() => catalogue(file)).toThrow(reason);
  });

  it('reloads an edited file, and keeps the last good characters when an edit breaks it', () => {
    const file = fileWith({ characters: [{ name: 'one', description: 'd', prompt: 'p' }] });
    const service = catalogue(file);
    writeFileSync(file, JSON.stringify({ characters: [{ name: 'two', description: 'd', prompt: 'p' }] }));
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    expect(service.list().map((c) => c.name)).toEqual(['two']);
    writeFileSync(file, '{ broken');
    utimesSync(file, new Date(), new Date(Date.now() + 10000));
    expect(service.list().map((c) => c.name)).toEqual(['two']);
  });
});
