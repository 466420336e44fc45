import { $, appendKeepingBottom, el } from './dom.js';
import { deviceIdProblem } from './devices.js';
import { whyNotConnected } from './reachability.js';
import { browserAudioProblem, MICROPHONE_FORMAT, OpusMicrophone, OpusSpeaker } from './talk-audio.js';

/**
 * @typedef {import('./frame-log.js').FrameLog} FrameLog
 * @typedef {{url: string, origin: string, token: string}} TalkGateway the gateway's WebSocket URL, its HTTP origin, the token
 * @typedef {'idle' | 'connecting' | 'ready' | 'listening' | 'speaking'} TalkState
 */

/**
 * The hello the firmware sends (`main/protocols/websocket_protocol.cc`), without device MCP:
 * this page offers no tools over it.
 */
const DEVICE_HELLO = {
  type: 'hello',
  version: 1,
  transport: 'websocket',
  features: { mcp: false },
  audio_params: {
    format: 'opus',
    sample_rate: MICROPHONE_FORMAT.sampleRate,
    channels: MICROPHONE_FORMAT.channels,
    frame_duration: MICROPHONE_FORMAT.frameDurationMs,
  },
};

/** What a server hello leaves out is the protocol's default: 24 kHz mono in 60 ms packets. */
const DEFAULT_SERVER_AUDIO = { sample_rate: 24000, channels: 1, frame_duration: 60 };

/** How long the firmware waits for the server's hello before it reports a connection error. */
const HELLO_TIMEOUT_MS = 10_000;

/** How the gateway closes a device's connection when another connection takes its id. */
const CLOSE_REPLACED = 4409;

/** Where the page keeps its device id, so the gateway sees the same device on every visit. */
const DEVICE_ID_KEY = 'console.talk.deviceId';

/** @type {Record<TalkState, string>} */
const STATE_TEXT = {
  idle: 'Not connected',
  connecting: 'Connecting…',
  ready: 'Connected',
  listening: 'Listening',
  speaking: 'Speaking',
};

/** The id this browser talks as: the one it used before, or a new `console-<random>`. */
function rememberedDeviceId() {
  try {
    const stored = localStorage.getItem(DEVICE_ID_KEY);
    if (stored && !deviceIdProblem(stored)) return stored;
  } catch {
    // Storage refused (a private window's settings): a new id each visit.
  }
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (byte) => byte.toString(16).padStart(2, '0')).join('');
  return remember(`console-${random}`);
}

/** @param {string} id */
function remember(id) {
  try {
    localStorage.setItem(DEVICE_ID_KEY, id);
  } catch {
    // As above: the id lasts as long as the page.
  }
  return id;
}

/**
 * The xiaozhi route of the gateway at `gatewayUrl` (under its path, for a gateway behind a
 * prefix), with what a browser cannot send as headers in the query: the device id, the
 * framing (1: each binary message one raw Opus packet) and the token.
 * @param {string} gatewayUrl @param {string} token @param {string} deviceId
 */
function deviceUrl(gatewayUrl, token, deviceId) {
  const url = new URL('xiaozhi/v1/', gatewayUrl);
  url.search = '';
  url.searchParams.set('device_id', deviceId);
  url.searchParams.set('protocol_version', '1');
  if (token) url.searchParams.set('token', token);
  return url.toString();
}

/**
 * The Talk view: this page as a xiaozhi device on `/xiaozhi/v1/`, speaking the firmware's
 * protocol. Talk sends the microphone as the firmware does in `auto` mode (the gateway's voice
 * activity detection decides when the user stopped) and the gateway's answer is played as it
 * comes; what was heard (`stt`), the answer's sentences, its emotion and any alert are shown,
 * and every frame goes to the frame log. Its connection is its own, beside the chat's: the
 * device joins the fleet under its id, so the Devices view can push to it.
 * @param {() => TalkGateway} gateway the gateway and token the page's connection form names
 * @param {FrameLog} frameLog
 */
export function setupTalk(gateway, frameLog) {
  const connectionForm = $('#talk-connection');
  const deviceIdInput = $('#talk-device-id');
  const disconnectButton = $('#talk-disconnect');
  const stateOutput = $('#talk-state');
  const talkButton = $('#talk-start');
  const stopButton = $('#talk-stop');
  const abortButton = $('#talk-abort');
  const listenAgain = $('#talk-again');
  const face = $('#talk-face');
  const sentOutput = $('#talk-sent');
  const receivedOutput = $('#talk-received');
  const problem = $('#talk-problem');
  const transcript = $('#talk-transcript');
  const log = frameLog.connection('xiaozhi', { repeated: ['session_id'] });

  deviceIdInput.value = rememberedDeviceId();

  /** @type {WebSocket | undefined} */
  let socket;
  /** Counts connection attempts, so the answer of a probe for an old one is not shown. */
  let attempt = 0;
  /** The server's hello came: the session is open. */
  let greeted = false;
  /** The device id of the current connection (the field may have been edited since). */
  let connectedAs = '';
  let sessionId = '';
  /** @type {OpusSpeaker | undefined} */
  let speaker;
  /** @type {OpusMicrophone | undefined} */
  let microphone;
  /** `listen start` was sent and no `listen stop`: the microphone's packets go to the gateway (but while it speaks). */
  let listening = false;
  /** Between `tts start` and `tts stop`. */
  let speaking = false;
  /** Abort was pressed during an answer: its audio still on the way is not played. */
  let aborted = false;
  /** The entry the sentences of the answer being spoken go to. @type {HTMLElement | undefined} */
  let answer;
  /**
   * The entry of the latest answer since the user last spoke, which its emotion (`llm`) goes
   * to: the gateway sends it once it knows it, before the first sentence or after the last.
   * @type {HTMLElement | undefined}
   */
  let latestAnswer;
  /** The emotion that came before its answer's entry was made. @type {string | undefined} */
  let nextEmotion;
  /** What went each way on the current (or last) connection, and how much of what came was played. */
  const sent = { packets: 0, bytes: 0 };
  const received = { packets: 0, bytes: 0, playedSeconds: 0 };

  /** @param {string} [text] @param {string} [reason] what kind of problem, for people skimming and for tests */
  const showProblem = (text, reason) => {
    problem.textContent = text ?? '';
    problem.hidden = !text;
    if (reason) problem.dataset.reason = reason;
    else delete problem.dataset.reason;
  };

  /** @param {string} kind @param {...(Node | string | undefined)} children */
  const add = (kind, ...children) => {
    transcript.querySelector('.hint')?.remove();
    const entry = el('article', { class: `entry entry-${kind}` }, ...children);
    appendKeepingBottom(transcript, () => transcript.append(entry));
    return entry;
  };

  /** @param {string} text */
  const note = (text) => add('note', text);

  const showCounts = () => {
    const kilobytes = (/** @type {number} */ bytes) => `${(bytes / 1024).toFixed(1)} kB`;
    sentOutput.dataset.packets = String(sent.packets);
    sentOutput.textContent = `Sent ${sent.packets} Opus packets (${kilobytes(sent.bytes)})`;
    receivedOutput.dataset.packets = String(received.packets);
    receivedOutput.dataset.playedMs = String(Math.round(received.playedSeconds * 1000));
    receivedOutput.textContent = `received ${received.packets} (${kilobytes(received.bytes)}), played ${received.playedSeconds.toFixed(1)} s`;
  };

  /** @returns {TalkState} */
  const state = () => (!socket ? 'idle' : !greeted ? 'connecting' : speaking ? 'speaking' : listening ? 'listening' : 'ready');

  const update = () => {
    const now = state();
    stateOutput.dataset.state = now;
    stateOutput.textContent = STATE_TEXT[now];
    disconnectButton.disabled = !socket;
    talkButton.disabled = !greeted || listening || microphone !== undefined;
    stopButton.disabled = !listening;
    abortButton.disabled = !greeted;
  };

  /** A message as the firmware sends it: with the session's id once there is one. @param {Record<string, unknown>} message */
  const send = (message) => {
    if (socket?.readyState !== WebSocket.OPEN) return;
    const framed = sessionId ? { session_id: sessionId, ...message } : message;
    const text = JSON.stringify(framed);
    socket.send(text);
    log.message('out', text, framed);
  };

  /** A packet of the microphone: sent while listening, dropped while the gateway speaks (as the firmware does). @param {Uint8Array} packet */
  const sendAudio = (packet) => {
    if (!listening || speaking || socket?.readyState !== WebSocket.OPEN) return;
    socket.send(packet);
    log.binary('out', packet.byteLength);
    sent.packets += 1;
    sent.bytes += packet.byteLength;
    showCounts();
  };

  /** Lets the microphone go; with `tellGateway`, says so (`listen stop`). @param {boolean} tellGateway */
  const stopTalking = (tellGateway) => {
    microphone?.stop();
    microphone = undefined;
    if (listening && tellGateway) send({ type: 'listen', state: 'stop' });
    listening = false;
    update();
  };

  const talk = async () => {
    if (!greeted || microphone) return;
    showProblem();
    const unable = browserAudioProblem();
    if (unable) return showProblem(unable, 'audio');
    void speaker?.resume();
    // Talking over the answer interrupts it, as the device's button does.
    if (speaking) abort();
    const starting = new OpusMicrophone(sendAudio, (error) => {
      if (microphone !== starting) return;
      showProblem(`The microphone stopped: ${error.message}`, 'microphone');
      stopTalking(true);
    });
    microphone = starting;
    update();
    try {
      await starting.start();
    } catch (error) {
      if (microphone !== starting) return;
      microphone = undefined;
      update();
      const { name, message } = /** @type {Error} */ (error);
      const refused = name === 'NotAllowedError' ? ' The browser or its user refused the microphone: allow it for this page and press Talk again.' : '';
      return showProblem(`Could not open the microphone: ${message}.${refused}`, 'microphone');
    }
    // Disconnected, or stopped, while the browser was asking.
    if (microphone !== starting) return starting.stop();
    send({ type: 'listen', state: 'start', mode: 'auto' });
    listening = true;
    update();
  };

  const abort = () => {
    send({ type: 'abort' });
    speaker?.stop();
    if (speaking) aborted = true;
  };

  /** @param {any} hello */
  const greet = (hello) => {
    if (greeted) return;
    greeted = true;
    sessionId = typeof hello.session_id === 'string' ? hello.session_id : '';
    const params = { ...DEFAULT_SERVER_AUDIO, ...hello.audio_params };
    const format = { sampleRate: params.sample_rate, channels: params.channels, frameDurationMs: params.frame_duration };
    note(`Connected as device ${connectedAs}: session ${sessionId}, answers in ${format.sampleRate} Hz Opus`);
    const unable = browserAudioProblem();
    const cannotPlay = (/** @type {Error} */ error) => showProblem(`Could not play the answer: ${error.message}`, 'playback');
    const played = (/** @type {number} */ seconds) => {
      received.playedSeconds += seconds;
      showCounts();
    };
    if (unable) showProblem(`${unable} Answers are shown, not played.`, 'audio');
    else {
      try {
        speaker = new OpusSpeaker(format, played, cannotPlay);
      } catch (error) {
        // A format the decoder refuses outright (a rate of 0, say): the texts still show.
        cannotPlay(/** @type {Error} */ (error));
      }
    }
    update();
  };

  /** @param {any} message */
  const onTts = (message) => {
    if (message.state === 'start') {
      speaking = true;
      aborted = false;
      answer = latestAnswer = add('assistant streaming', el('p'));
      if (nextEmotion) showEmotion(answer, nextEmotion);
      nextEmotion = undefined;
      // The firmware stops sending the microphone here; this page lets it go too unless it is to listen again.
      if (listening && !listenAgain.checked) stopTalking(true);
    } else if (message.state === 'sentence_start' && typeof message.text === 'string') {
      answer ??= latestAnswer = add('assistant streaming', el('p'));
      const text = /** @type {HTMLElement} */ (answer.querySelector('p'));
      text.textContent = text.textContent ? `${text.textContent} ${message.text}` : message.text;
    } else if (message.state === 'stop') {
      speaking = false;
      aborted = false;
      answer?.classList.remove('streaming');
      answer = undefined;
      // Auto mode's conversation: the firmware listens again once the answer is over.
      if (listening) send({ type: 'listen', state: 'start', mode: 'auto' });
    }
    update();
  };

  /** @param {HTMLElement} entry @param {string} emotion */
  const showEmotion = (entry, emotion) => {
    entry.querySelector('.emotion')?.remove();
    entry.append(el('small', { class: 'emotion', text: emotion }));
  };

  /** @param {any} message */
  const onLlm = (message) => {
    const emotion = `${message.text ?? ''} ${message.emotion ?? ''}`.trim();
    face.textContent = emotion;
    face.dataset.emotion = String(message.emotion ?? '');
    if (latestAnswer) showEmotion(latestAnswer, emotion);
    else nextEmotion = emotion;
  };

  /** What the gateway heard: a new turn, whose answer and emotion are still to come. @param {string} text */
  const onStt = (text) => {
    latestAnswer = undefined;
    nextEmotion = undefined;
    add('user', el('p', { text }));
  };

  /** @param {string} text */
  const onText = (text) => {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      message = undefined;
    }
    log.message('in', text, message);
    if (!message || typeof message !== 'object') return;
    if (message.type === 'hello') greet(message);
    else if (message.type === 'stt' && typeof message.text === 'string') onStt(message.text);
    else if (message.type === 'llm') onLlm(message);
    else if (message.type === 'tts') onTts(message);
    else if (message.type === 'alert') {
      add(
        `alert ${message.status === 'error' ? 'error' : 'note'}`,
        el('strong', { class: 'code', text: String(message.status ?? 'alert') }),
        el('span', { text: ` ${message.message ?? ''}` }),
        message.emotion ? el('small', { class: 'emotion', text: String(message.emotion) }) : undefined,
      );
    }
  };

  /** @param {ArrayBuffer} data */
  const onAudio = (data) => {
    log.binary('in', data.byteLength);
    received.packets += 1;
    received.bytes += data.byteLength;
    if (!aborted) speaker?.play(new Uint8Array(data));
    showCounts();
  };

  /** Back to not connected: microphone and speaker let go; the socket, if any, is the caller's. */
  const reset = () => {
    stopTalking(false);
    speaker?.close();
    speaker = undefined;
    socket = undefined;
    greeted = false;
    speaking = false;
    aborted = false;
    sessionId = '';
    answer?.classList.remove('streaming');
    answer = undefined;
    latestAnswer = undefined;
    nextEmotion = undefined;
    update();
  };

  const disconnect = () => {
    const current = socket;
    reset();
    if (current && current.readyState !== WebSocket.CLOSED && current.readyState !== WebSocket.CLOSING) {
      current.close(1000, 'Disconnected');
      note('Disconnected');
    }
  };

  const connect = () => {
    disconnect();
    showProblem();
    const deviceId = deviceIdInput.value.trim();
    const invalid = deviceIdProblem(deviceId);
    if (invalid) return showProblem(`Device id "${deviceId}": ${invalid}`, 'invalid');
    remember(deviceId);
    connectedAs = deviceId;
    Object.assign(sent, { packets: 0, bytes: 0 });
    Object.assign(received, { packets: 0, bytes: 0, playedSeconds: 0 });
    showCounts();
    const { url, origin, token } = gateway();
    let opening;
    try {
      opening = new WebSocket(deviceUrl(url, token, deviceId));
    } catch (error) {
      return showProblem(/** @type {Error} */ (error).message, 'invalid');
    }
    const ws = opening;
    const mine = ++attempt;
    ws.binaryType = 'arraybuffer';
    socket = ws;
    let opened = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let noHello;
    update();

    ws.addEventListener('open', () => {
      opened = true;
      send(DEVICE_HELLO);
      noHello = setTimeout(() => {
        if (socket !== ws || greeted) return;
        disconnect();
        showProblem(`The gateway sent no hello within ${HELLO_TIMEOUT_MS / 1000} s of this page's: the firmware gives up then too.`, 'session');
      }, HELLO_TIMEOUT_MS);
    });
    ws.addEventListener('message', (/** @type {MessageEvent} */ { data }) => {
      if (socket !== ws) return;
      if (typeof data === 'string') onText(data);
      else onAudio(data);
    });
    ws.addEventListener('close', async ({ code, reason }) => {
      clearTimeout(noHello);
      if (socket !== ws) return;
      const hadSession = greeted;
      reset();
      const why = reason ? ` ${reason}` : '';
      if (hadSession) {
        note(`Connection closed (${code}${why})`);
        if (code === CLOSE_REPLACED) showProblem(`${reason} (close ${code}): another connection named itself device "${deviceId}".`, 'replaced');
        return;
      }
      if (opened) return showProblem(`The gateway closed the connection before its hello (${code}${why}).`, 'session');
      // Browsers hide why an upgrade was refused: the gateway's catalogue tells about the token, at least.
      const refusal = await whyNotConnected(origin, token);
      if (mine !== attempt) return;
      const asDevice =
        refusal.reason === 'upgrade-refused'
          ? ` As device "${deviceId}", it is also refused when the token may not connect as that device (its devices in the tokens file), when the id belongs to another token (DEVICE_ID_TAKEN), or when the token may not use the xiaozhi protocol.`
          : '';
      showProblem(`Could not connect to ${new URL(ws.url).pathname}: ${refusal.text}${asDevice}`, refusal.reason);
    });
  };

  connectionForm.addEventListener('submit', (/** @type {SubmitEvent} */ event) => {
    event.preventDefault();
    connect();
  });
  disconnectButton.addEventListener('click', disconnect);
  talkButton.addEventListener('click', () => void talk());
  stopButton.addEventListener('click', () => stopTalking(true));
  abortButton.addEventListener('click', abort);
  showCounts();
  update();
}
