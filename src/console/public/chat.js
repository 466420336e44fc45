import { $, appendKeepingBottom, brief, el, pretty } from './dom.js';
import { meaningOf } from './error-codes.js';

/** @typedef {import('./app.js').ViewLifecycle} ViewLifecycle */

/** How each session change reads in the transcript. */
const SESSION_NOTES = {
  connected: 'Connected: session',
  started: 'New session',
  resumed: 'Resumed session',
  ended: 'Session ended; new session',
  resumed_elsewhere: 'Another connection resumed this session; the gateway moved this one to session',
  resume_failed: 'The previous session could not be resumed; now in session',
};

/**
 * The chat view: the conversation as it happens (what was said, the answers, the tools that
 * ran, every error with its code), the session controls and the settings.
 * @returns {ViewLifecycle}
 */
export function setupChat() {
  const transcript = $('#transcript');
  const form = $('#chat-form');
  const input = $('#chat-input');
  const sessionId = $('#session-id');
  const resumeForm = $('#session-resume');
  const settingsForm = $('#settings');
  const settingsResult = $('#settings-result');
  const stop = $('#chat-stop');
  const controls = [...form.elements, ...resumeForm.elements, $('#session-new'), $('#session-end'), $('#ping'), settingsForm.querySelector('button')];
  /** @type {import('./app.js').Client | undefined} */
  let client;
  /** @type {HTMLElement | undefined} */
  let statusLine;
  /** Device tool cards waiting for the page's answer, by call id. @type {Map<string, HTMLElement>} */
  const deviceCalls = new Map();
  /** The answers being streamed, by turn id, until their final frame. @type {Map<string, HTMLElement>} */
  const streaming = new Map();

  /** @param {string} kind @param {...(Node | string | undefined)} children */
  const add = (kind, ...children) => {
    transcript.querySelector('.hint')?.remove();
    const entry = el('article', { class: `entry entry-${kind}` }, ...children);
    appendKeepingBottom(transcript, () => (statusLine ? statusLine.before(entry) : transcript.append(entry)));
    return entry;
  };

  /** @param {string} text */
  const note = (text) => add('note', text);

  /** A failure with its code, what the code means, and the gateway's details. @param {{code: string, message: string, details?: string}} error */
  const showError = (error) =>
    add(
      'error',
      el('strong', { class: 'code', text: error.code }),
      el('span', { text: ` ${error.message.replace(`${error.code}: `, '')}` }),
      error.details ? el('div', { class: 'details', text: error.details }) : undefined,
      meaningOf(error.code) ? el('div', { class: 'meaning', text: meaningOf(error.code) }) : undefined,
    );

  /** Errors the gateway sent are shown as they arrive; only the client's own need showing here. @param {any} error */
  const showUnlessFrame = (error) => {
    if (error instanceof TypeError || error instanceof RangeError) showError({ code: 'INVALID_INPUT', message: error.message });
    else if (!error.frame) showError(error);
  };

  /** @param {string | undefined} text */
  const setStatus = (text) => {
    statusLine?.remove();
    statusLine = text ? el('p', { class: 'entry entry-status', text }) : undefined;
    if (statusLine) appendKeepingBottom(transcript, () => transcript.append(/** @type {HTMLElement} */ (statusLine)));
  };

  /** The page's answer to a device tool call. @param {{success: boolean, result?: unknown, error?: string | null}} outcome */
  const answerText = (outcome) => (outcome.success ? `→ ${brief(outcome.result)}` : `→ failed: ${outcome.error}`);

  /** @param {boolean} enabled */
  const enable = (enabled) => {
    controls.forEach((control) => (control.disabled = !enabled));
    stop.disabled = true;
  };

  /** The settings the form holds; `stream` and `barge_in` are sent on connecting too. */
  const formSettings = () => {
    const fields = settingsForm.elements;
    /** @type {Record<string, unknown>} */
    const settings = {
      enable_context: fields.enable_context.checked,
      clean_response: fields.clean_response.checked,
      stream: fields.stream.checked,
      barge_in: fields.barge_in.checked,
    };
    if (fields.temperature.value !== '') settings.temperature = Number(fields.temperature.value);
    if (fields.max_tokens.value !== '') settings.max_tokens = Number(fields.max_tokens.value);
    if (fields.language.value !== '') settings.language = fields.language.value;
    return settings;
  };

  /** Says where a pushed answer came from. @param {string} kind */
  const pushedLabel = (kind) => (kind.includes('pushed') ? el('small', { class: 'origin', text: 'Pushed by the gateway to this device' }) : undefined);

  /** How long the turn took to its first sentence and in all. @param {any} timing */
  const timingText = (timing) => (timing ? `first sentence ${timing.first_sentence_ms ?? '–'} ms · total ${timing.total_ms} ms` : undefined);

  form.addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    const text = input.value;
    if (!client || text.trim() === '') return;
    input.value = '';
    add('user', el('p', { text }));
    client.sendTurn(text).catch(showUnlessFrame);
  });

  stop.addEventListener('click', () => client?.cancel().catch(showUnlessFrame));

  $('#session-new').addEventListener('click', () => client?.startSession().catch(showUnlessFrame));
  $('#session-end').addEventListener('click', () => client?.endSession().catch(showUnlessFrame));
  $('#ping').addEventListener('click', () => client?.ping().then((ms) => note(`pong in ${ms} ms`), showUnlessFrame));
  resumeForm.addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    client?.startSession(resumeForm.elements.sessionId.value.trim()).catch(showUnlessFrame);
  });

  settingsForm.addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    const settings = formSettings();
    settingsResult.className = '';
    client?.configure(settings).then(
      () => (settingsResult.textContent = `Sent ${brief(settings)}`),
      (/** @type {Error} */ error) => {
        settingsResult.className = 'problem';
        settingsResult.textContent = error.message;
      },
    );
  });

  return {
    connected(connectedClient, listen) {
      client = connectedClient;
      enable(true);
      listen('status', (frame) => {
        if (frame.status === 'processing') setStatus('The assistant is thinking…');
        else if (frame.status === 'waiting_for_tools') setStatus(`Waiting for ${frame.data.pending_tools} device tool(s)…`);
        else if (frame.status === 'cancelled') {
          streaming.get(frame.turn_id)?.classList.remove('streaming');
          streaming.delete(frame.turn_id);
          note('Stopped: the answer was cancelled');
        } else if (frame.status === 'idle') setStatus(undefined);
        stop.disabled = frame.status === 'idle' || frame.status === 'cancelled' || frame.status === 'connected';
      });
      listen('llm_response', (frame) => {
        const turnId = frame.turn_id ?? '';
        // Nobody on this page asked for a push: a say or a turn sent to this page as a device, or a reminder.
        const kind = /** @type {any} */ (frame).origin === 'push' ? 'assistant pushed' : 'assistant';
        let entry = streaming.get(turnId);
        if (frame.is_final === false) {
          if (!entry) streaming.set(turnId, (entry = add(`${kind} streaming`, el('p'), pushedLabel(kind))));
          /** @type {HTMLElement} */ (entry.querySelector('p')).textContent += frame.content;
          return;
        }
        streaming.delete(turnId);
        const calls =
          frame.tool_calls.length > 0
            ? el(
                'ul',
                { class: 'calls' },
                frame.tool_calls.map((call) =>
                  el('li', { class: call.success ? 'ok' : 'failed', text: `${call.name} (${call.location})${call.success ? '' : ' failed'}` }),
                ),
              )
            : undefined;
        const timing = timingText(frame.timing);
        if (!entry) entry = add(kind, el('p'), pushedLabel(kind));
        entry.classList.remove('streaming');
        /** @type {HTMLElement} */ (entry.querySelector('p')).textContent = frame.content;
        entry.append(...[calls, timing ? el('small', { class: 'timing', text: timing }) : undefined].filter((node) => node !== undefined));
      });
      listen('tool_call', (frame) => {
        // A failed server tool's result is what the model was told: {error: {code, message}}.
        const failure = frame.success ? undefined : /** @type {any} */ (frame.result)?.error;
        add(
          frame.success ? 'tool' : 'tool failed',
          el('strong', { text: `Server tool ${frame.tool_name}` }),
          el('code', { text: `(${brief(frame.arguments)})` }),
          el('div', {
            text: frame.success ? `→ ${brief(frame.result)}` : `→ failed: ${failure?.code ?? ''} ${failure?.message ?? pretty(frame.result)}`,
          }),
          failure?.code ? el('div', { class: 'meaning', text: meaningOf(failure.code) }) : undefined,
          el('small', { text: `${frame.duration_ms} ms` }),
        );
      });
      listen('tool_callback', (frame) => {
        const card = add(
          'tool device',
          el('strong', { text: `Device tool ${frame.tool_name}` }),
          el('code', { text: `(${brief(frame.arguments)})` }),
          el('div', { class: 'answer', text: '→ running on this page…' }),
        );
        deviceCalls.set(frame.call_id, card);
      });
      listen('frame', ({ direction, frame }) => {
        if (direction !== 'out' || frame?.type !== 'tool_result') return;
        const card = deviceCalls.get(frame.call_id);
        deviceCalls.delete(frame.call_id);
        if (!card) return;
        card.classList.toggle('failed', !frame.success);
        /** @type {HTMLElement} */ (card.querySelector('.answer')).textContent = answerText(frame);
      });
      listen('error', showError);
      listen('session', (change) => {
        if (change.reason === 'connected') {
          // The page's way of speaking, from the first turn on (the client keeps it across reconnections).
          const { stream, barge_in } = formSettings();
          connectedClient.configure({ stream, barge_in }).catch(showUnlessFrame);
        }
        sessionId.textContent = change.sessionId;
        note(`${SESSION_NOTES[change.reason]} ${change.sessionId}`);
        if (change.error) showError(change.error);
      });
      listen('disconnected', ({ code, reason, willReconnect }) => {
        setStatus(undefined);
        note(`Connection closed (${code}${reason ? ` ${reason}` : ''})${willReconnect ? ', reconnecting…' : ''}`);
      });
      listen('reconnecting', ({ attempt, delayMs }) => note(`Reconnecting, attempt ${attempt}, in ${delayMs} ms`));
    },

    disconnected() {
      client = undefined;
      enable(false);
      setStatus(undefined);
      deviceCalls.clear();
      streaming.clear();
      sessionId.textContent = 'none';
    },
  };
}
