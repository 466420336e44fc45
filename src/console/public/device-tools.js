import { $, el, pretty } from './dom.js';
import { meaningOf } from './error-codes.js';

/** @typedef {import('./app.js').ViewLifecycle} ViewLifecycle */

/** The tool a new page starts with: the spec's own example (section 10). */
const EXAMPLE = {
  name: 'get_battery',
  description: 'Battery level of this device, in percent, and whether it is charging',
  parameters: { type: 'object', properties: {}, required: [] },
  answer: { level: 85, charging: false },
};

const BLANK = {
  name: 'control_device',
  description: 'Turns a device on or off',
  parameters: {
    type: 'object',
    properties: {
      device: { type: 'string', description: 'light, ac or tv' },
      action: { type: 'string', enum: ['turn_on', 'turn_off'] },
    },
    required: ['device', 'action'],
  },
  answer: { ok: true },
};

/** Who may call a tool (`visibility`), as the select offers it; the first is the gateway's default. */
const VISIBILITIES = [
  ['both', 'The model and agents'],
  ['model', 'The model only'],
  ['agents', 'Agents only (Devices view, MCP…)'],
];

/**
 * One device tool being edited: its definition (sent at registration) and how the page answers
 * its calls (read at each call, so the answer can change while the tool is registered).
 */
class ToolEditor {
  /** @param {typeof EXAMPLE} tool @param {(editor: ToolEditor) => void} onRemove */
  constructor(tool, onRemove) {
    this.name = el('input', { value: tool.name, spellcheck: 'false', 'aria-label': 'Name' });
    this.description = el('input', { value: tool.description, 'aria-label': 'Description' });
    this.visibility = el(
      'select',
      { 'aria-label': 'Who may call it' },
      VISIBILITIES.map(([value, text]) => el('option', { value, text })),
    );
    this.parameters = el('textarea', { rows: 6, spellcheck: 'false', 'aria-label': 'Parameters (JSON Schema)' });
    this.parameters.value = pretty(tool.parameters);
    this.answer = el('textarea', { rows: 3, spellcheck: 'false', 'aria-label': 'Answer (JSON)' });
    this.answer.value = pretty(tool.answer);
    this.fail = el('input', { type: 'checkbox' });
    this.failure = el('input', { value: 'The device is busy', 'aria-label': 'Failure message' });
    this.delay = el('input', { type: 'number', min: 0, step: 100, value: 0, 'aria-label': 'Delay (ms)' });
    this.status = el('p', { class: 'tool-status', text: 'Not registered' });
    this.registered = false;
    this.calls = 0;
    this.card = el(
      'article',
      { class: 'card device-tool' },
      el('label', {}, 'Name', this.name),
      el('label', {}, 'Description', this.description),
      el('label', { title: 'Agents reach the tools of a page connected with a device id' }, 'Who may call it', this.visibility),
      el('label', {}, 'Parameters (JSON Schema)', this.parameters),
      el('label', {}, 'Answer with (JSON)', this.answer),
      el('div', { class: 'row' }, el('label', { class: 'check' }, this.fail, 'Fail with'), this.failure),
      el('label', { class: 'inline' }, 'Answer after (ms)', this.delay),
      this.status,
      el('button', { type: 'button', class: 'secondary', text: 'Remove', onclick: () => onRemove(this) }),
    );
  }

  /**
   * The tool for `registerTools`, or a message saying which field is wrong.
   * @returns {{tool: import('./app.js').ClientTool} | {problem: string}}
   */
  toClientTool() {
    let parameters;
    try {
      parameters = JSON.parse(this.parameters.value);
    } catch (error) {
      return { problem: `Parameters are not JSON: ${/** @type {Error} */ (error).message}` };
    }
    return {
      tool: {
        name: this.name.value.trim(),
        description: this.description.value,
        parameters,
        // Sent only when not the default, so the registration stays what it was for gateways before visibility.
        ...(this.visibility.value === 'both' ? {} : { visibility: this.visibility.value }),
        handler: (_args, { signal }) => this.respond(signal),
      },
    };
  }

  /** Answers a call the way the card says, when it says. @param {AbortSignal} signal */
  async respond(signal) {
    this.calls += 1;
    this.showStatus('registered', `Registered; called ${this.calls} time(s)`);
    const delay = Number(this.delay.value) || 0;
    if (delay > 0) {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, delay);
        signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
      });
    }
    if (this.fail.checked) throw new Error(this.failure.value || 'The device failed');
    return JSON.parse(this.answer.value);
  }

  /** @param {'idle' | 'registered' | 'failed'} state @param {string} text @param {string} [meaning] */
  showStatus(state, text, meaning) {
    this.status.dataset.state = state;
    this.status.replaceChildren(text, meaning ? el('span', { class: 'meaning', text: meaning }) : '');
  }
}

/**
 * The device tools view: tools this page registers as a device, with an editable schema and
 * an editable answer; the model calls them during a turn and the page answers.
 * @returns {ViewLifecycle}
 */
export function setupDeviceTools() {
  const list = $('#device-tools');
  const registerButton = $('#device-tools-register');
  /** @type {ToolEditor[]} */
  const editors = [];
  /** @type {import('./app.js').Client | undefined} */
  let client;

  /** @param {typeof EXAMPLE} tool */
  const addEditor = (tool) => {
    const editor = new ToolEditor(tool, (removed) => {
      editors.splice(editors.indexOf(removed), 1);
      removed.card.remove();
    });
    editors.push(editor);
    list.append(editor.card);
  };

  addEditor(EXAMPLE);
  $('#device-tool-add').addEventListener('click', () => addEditor({ ...BLANK, name: `${BLANK.name}_${editors.length + 1}` }));

  registerButton.addEventListener('click', async () => {
    const pending = editors.filter((editor) => !editor.registered);
    /** @type {[ToolEditor, import('./app.js').ClientTool][]} */
    const ready = [];
    for (const editor of pending) {
      const built = editor.toClientTool();
      if ('problem' in built) editor.showStatus('failed', built.problem);
      else ready.push([editor, built.tool]);
    }
    if (!client || ready.length === 0) return;
    try {
      const registrations = await client.registerTools(ready.map(([, tool]) => tool));
      registrations.forEach((registration, index) => {
        const [editor] = ready[index];
        editor.registered = registration.status === 'registered';
        if (editor.registered) editor.showStatus('registered', 'Registered');
        else editor.showStatus('failed', `${registration.code}: ${registration.error}`, meaningOf(registration.code ?? ''));
      });
    } catch (error) {
      const { code, message } = /** @type {any} */ (error);
      ready.forEach(([editor]) => editor.showStatus('failed', message, meaningOf(code ?? '')));
    }
  });

  return {
    connected(connectedClient) {
      client = connectedClient;
      registerButton.disabled = false;
      editors.forEach((editor) => {
        editor.registered = false;
        editor.showStatus('idle', 'Not registered');
      });
    },
    disconnected() {
      client = undefined;
      registerButton.disabled = true;
    },
  };
}
