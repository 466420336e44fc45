import { $, bearer, el, pretty } from './dom.js';
import { meaningOf } from './error-codes.js';
import { whyNotConnected } from './reachability.js';

/**
 * @typedef {{name: string, description: string, source: string, tags: string[], inputSchema: Record<string, any>,
 *   outputSchema?: Record<string, any>, examples: {description: string, arguments?: Record<string, unknown>}[], timeoutMs: number}} CatalogueTool
 * @typedef {{ok: boolean, status: string, items: string[], body: unknown}} CallAnswer what a call came back with:
 *   whether it succeeded, how it was answered (`HTTP 200`), the result's parts as text, the whole answer
 * @typedef {(tool: CatalogueTool, args: Record<string, unknown>, gateway: Gateway) => Promise<CallAnswer>} Caller
 * @typedef {{origin: string, token: string}} Gateway
 */

/** LiteMCP's version, sent with every call. */
const LITEMCP_VERSION = [1, 0, 0];

/** Extra time a UTCP call gets beyond the tool's own limit, for the gateway's TOOL_TIMEOUT to come first. */
const UTCP_GRACE_MS = 5000;

let utcpCalls = 0;

/**
 * LiteMCP takes positional strings in the order of the schema's properties: strings as they
 * are, anything else as JSON; an empty string skips a parameter that is not a string.
 * @param {CatalogueTool} tool @param {Record<string, unknown>} args
 */
export function liteMcpArguments(tool, args) {
  const names = Object.keys(tool.inputSchema.properties ?? {});
  const unknown = Object.keys(args).filter((name) => !names.includes(name));
  if (unknown.length > 0) throw new Error(`${tool.name} has no parameter ${unknown.join(', ')} (it takes: ${names.join(', ') || 'none'})`);
  const last = names.findLastIndex((name) => name in args);
  return names.slice(0, last + 1).map((name) => {
    const value = args[name];
    if (value === undefined) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

/** The ways the console can call a catalogue tool, by the name shown in the form. @type {Record<string, Caller>} */
const CALLERS = {
  LiteMCP: async (tool, args, gateway) => {
    const response = await fetch(`${gateway.origin}/litemcp/${encodeURIComponent(tool.name)}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...bearer(gateway.token) },
      body: JSON.stringify({ version: LITEMCP_VERSION, tool: tool.name, arguments: liteMcpArguments(tool, args) }),
    });
    const body = await response.json().catch(() => null);
    return {
      ok: response.ok && body?.response?.error === false,
      status: `HTTP ${response.status}`,
      items: (body?.response?.content ?? []).map((/** @type {{type: string, data: string}} */ item) => `${item.type}: ${item.data}`),
      body,
    };
  },

  /**
   * UTCP 0.1 over WebSocket at `/utcp` (token in the query, as browsers must): one `call`,
   * answered by a `result` (after `partial` ones for a streaming tool such as `countdown`) or an
   * `error` with its code. Arguments travel as the JSON they are.
   */
  UTCP: (tool, args, gateway) =>
    new Promise((resolve, reject) => {
      const url = new URL('/utcp', gateway.origin.replace(/^http/, 'ws'));
      if (gateway.token) url.searchParams.set('token', gateway.token);
      const id = `console-${++utcpCalls}`;
      /** @type {any[]} */
      const frames = [];
      const socket = new WebSocket(url);
      /** @param {CallAnswer | Error} outcome */
      const finish = (outcome) => {
        clearTimeout(limit);
        socket.onclose = null;
        socket.close();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const limitMs = tool.timeoutMs + UTCP_GRACE_MS;
      const limit = setTimeout(() => finish(new Error(`No UTCP answer within ${limitMs} ms`)), limitMs);
      socket.onopen = () => socket.send(JSON.stringify({ type: 'call', id, tool: tool.name, params: args }));
      let opened = false;
      socket.addEventListener('open', () => (opened = true));
      socket.onclose = (event) => {
        const closed = `The UTCP connection closed before an answer (${event.code})`;
        if (opened) finish(new Error(closed));
        else void whyNotConnected(gateway.origin, gateway.token).then((why) => finish(new Error(`${closed}. ${why.text}`)));
      };
      socket.onmessage = (event) => {
        const frame = JSON.parse(event.data);
        if (frame.id !== id) return;
        frames.push(frame);
        if (frame.type === 'result' && frame.partial) return;
        const pieces = frames
          .filter((piece) => piece.type === 'result')
          .map((piece) => `${piece.partial ? 'partial' : 'result'}: ${JSON.stringify(piece.result)}`);
        if (frame.type === 'result') {
          finish({ ok: true, status: 'result', items: pieces, body: frames });
        } else {
          const { code, message } = frame.error ?? {};
          finish({ ok: false, status: `error ${code}`, items: [...pieces, `${code}: ${message}`, meaningOf(code, 'direct')].filter(Boolean), body: frames });
        }
      };
    }),
};

/** A value of each JSON Schema type, for required properties the schema gives no value for. @type {Record<string, unknown>} */
const EMPTY_VALUES = { number: 0, integer: 0, boolean: false, object: {}, array: [], string: '' };

/**
 * Arguments to start a call form with: each property's example or default, and a value of the
 * right type for required properties that have neither. The schema may come from a device, so
 * anything that is not the shape expected is skipped rather than trusted.
 * @param {unknown} inputSchema
 * @param {Record<string, unknown>} [example] the arguments of the tool's first example
 */
export function argumentsTemplate(inputSchema, example = {}) {
  const isObject = (/** @type {unknown} */ value) => value !== null && typeof value === 'object' && !Array.isArray(value);
  /** @type {Record<string, unknown>} */
  const template = {};
  if (!isObject(inputSchema)) return template;
  const { properties, required } = /** @type {Record<string, any>} */ (inputSchema);
  if (!isObject(properties)) return template;
  const needed = new Set(Array.isArray(required) ? required : []);
  const first = (/** @type {unknown} */ list) => (Array.isArray(list) ? list[0] : undefined);
  for (const [name, schema] of Object.entries(properties)) {
    const property = isObject(schema) ? /** @type {Record<string, any>} */ (schema) : {};
    const given = first(property.examples) ?? example[name] ?? property.default;
    if (given !== undefined) template[name] = given;
    else if (needed.has(name)) template[name] = first(property.enum) ?? (Object.hasOwn(EMPTY_VALUES, property.type) ? EMPTY_VALUES[property.type] : '');
  }
  return template;
}

/**
 * The catalogue view: every shared tool (`GET /tools`) with its source and schemas, and a form
 * that calls it through LiteMCP's HTTP transport or UTCP's WebSocket provider and shows the result.
 * @param {() => Gateway} gateway where to read the catalogue and call tools, with which token
 */
export function setupCatalogue(gateway) {
  const list = $('#catalogue');
  const filter = $('#catalogue-filter');
  const problem = $('#catalogue-problem');
  /** @type {CatalogueTool[]} */
  let tools = [];
  let loaded = '';

  const render = () => {
    const words = filter.value.trim().toLowerCase();
    const shown = tools.filter((tool) => `${tool.name} ${tool.source} ${tool.description}`.toLowerCase().includes(words));
    list.replaceChildren(...shown.map((tool) => toolItem(tool, gateway)));
  };

  const load = async () => {
    problem.hidden = true;
    const target = gateway();
    try {
      const response = await fetch(`${target.origin}/tools`, { headers: bearer(target.token) });
      const body = await response.json().catch(() => null);
      if (!response.ok) {
        const code = body?.error?.code ?? `HTTP ${response.status}`;
        throw new Error(`${code}: ${body?.error?.message ?? response.statusText}. ${meaningOf(code)}`);
      }
      // Rendering again would undo what the reader opened and typed; only a changed catalogue is.
      if (JSON.stringify(body.tools) === loaded) return;
      loaded = JSON.stringify(body.tools);
      tools = body.tools;
      render();
    } catch (error) {
      problem.textContent = `Could not read the catalogue at ${target.origin}/tools: ${/** @type {Error} */ (error).message}`;
      problem.hidden = false;
    }
  };

  filter.addEventListener('input', render);
  $('#catalogue-refresh').addEventListener('click', load);
  return { load };
}

/** @param {CatalogueTool} tool @param {() => Gateway} gateway */
function toolItem(tool, gateway) {
  const args = el('textarea', { rows: 4, spellcheck: 'false', 'aria-label': `Arguments of ${tool.name} (JSON)` });
  args.value = pretty(argumentsTemplate(tool.inputSchema, tool.examples[0]?.arguments));
  const via = el(
    'select',
    { 'aria-label': 'Call through' },
    Object.keys(CALLERS).map((name) => el('option', { text: name })),
  );
  const result = el('div', { class: 'call-result', 'aria-live': 'polite' });

  const call = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    result.replaceChildren(el('p', { text: 'Calling…' }));
    const started = performance.now();
    try {
      const answer = await CALLERS[via.value](tool, JSON.parse(args.value), gateway());
      const elapsed = `${Math.round(performance.now() - started)} ms`;
      result.dataset.ok = String(answer.ok);
      result.replaceChildren(
        el('p', { class: answer.ok ? 'ok' : 'failed', text: `${via.value}: ${answer.status}, ${answer.ok ? 'succeeded' : 'failed'} in ${elapsed}` }),
        ...answer.items.map((item) => el('pre', { class: 'content', text: item })),
        el('details', {}, el('summary', { text: 'Whole answer' }), el('pre', { text: pretty(answer.body) })),
      );
    } catch (error) {
      result.dataset.ok = 'false';
      result.replaceChildren(el('p', { class: 'failed', text: /** @type {Error} */ (error).message }));
    }
  };

  return el(
    'li',
    { class: 'card tool', dataset: { tool: tool.name } },
    el(
      'details',
      {},
      el(
        'summary',
        {},
        el('strong', { text: tool.name }),
        el('span', { class: 'badge', text: tool.source }),
        ...tool.tags.map((tag) => el('span', { class: 'badge tag', text: tag })),
        el('p', { class: 'description', text: tool.description }),
      ),
      el('h3', { text: 'Input schema' }),
      el('pre', { text: pretty(tool.inputSchema) }),
      tool.outputSchema ? [el('h3', { text: 'Output schema' }), el('pre', { text: pretty(tool.outputSchema) })] : undefined,
      tool.examples.length > 0
        ? [
            el('h3', { text: 'Examples' }),
            el(
              'ul',
              {},
              tool.examples.map((example) => el('li', { text: `${example.description} ${example.arguments ? pretty(example.arguments) : ''}` })),
            ),
          ]
        : undefined,
      el(
        'form',
        { class: 'call', onsubmit: call },
        el('label', {}, 'Arguments (JSON)', args),
        el('div', { class: 'row' }, el('label', { class: 'inline' }, 'Call through', via), el('button', { type: 'submit', text: 'Call' })),
      ),
      result,
    ),
  );
}
