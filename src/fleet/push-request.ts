/**
 * What a push asks, as one JSON Schema for every way of asking: the `device_say` tool's
 * arguments and the bodies of `POST /devices/<id>/say`, `POST /devices/say` and
 * `POST /devices/<id>/turns`, so their checks cannot drift apart. What depends on the settings
 * (the text's length, `FLEET_PUSH_MAX_CHARS`; `hold_s` up to `FLEET_HOLD_MAX_S`; how many devices)
 * is checked by the push itself, with the answers those bounds have (413, 400).
 */
export const PUSH_PROPERTIES = {
  text: { type: 'string', minLength: 1, description: 'What the device says', examples: ['Dinner is ready.'] },
  interrupt: { type: 'boolean', default: false, description: 'Cancel what the device is saying first' },
  hold_s: { type: 'number', minimum: 0, description: 'If the device is offline, keep the sentence this many seconds for its next connection' },
} as const;

/** {@link PUSH_PROPERTIES} with the words an HTTP client reads when one is wrong. */
const PUSH_FIELDS = {
  text: { ...PUSH_PROPERTIES.text, errorMessage: 'text must be a non-empty string' },
  interrupt: { ...PUSH_PROPERTIES.interrupt, errorMessage: 'interrupt must be true or false' },
  hold_s: { ...PUSH_PROPERTIES.hold_s, errorMessage: 'hold_s must be a number of seconds, 0 or more' },
} as const;

const DEVICE_ID_PROPERTY = {
  type: 'string',
  minLength: 1,
  maxLength: 62,
  description: 'The device, as it named itself (Device-Id)',
  examples: ['kitchen-speaker'],
} as const;

/** The arguments of a tool about one device: `{"device_id"}`. */
export const ONE_DEVICE_SCHEMA = {
  type: 'object',
  properties: { device_id: DEVICE_ID_PROPERTY },
  required: ['device_id'],
  additionalProperties: false,
} as const;

const DEVICES_PROPERTY = {
  type: 'array',
  minItems: 1,
  items: { type: 'string', minLength: 1, maxLength: 128 },
  description: 'Several devices: ids, and globs matching the online devices you may reach',
  examples: [['kitchen-*', 'hall-speaker']],
} as const;

/** The words for a body that is no object, or has a field no push takes. */
const BODY_MESSAGES = { type: 'The body must be a JSON object', additionalProperties: 'The body has a field this route does not take' };

/** `POST /devices/<id>/say`. */
export const SAY_BODY_SCHEMA = {
  type: 'object',
  properties: PUSH_FIELDS,
  required: ['text'],
  additionalProperties: false,
  errorMessage: { ...BODY_MESSAGES, required: { text: 'text is required' } },
} as const;

/** `POST /devices/say`: one push to many devices. */
export const FAN_OUT_BODY_SCHEMA = {
  type: 'object',
  properties: { devices: { ...DEVICES_PROPERTY, errorMessage: 'devices must be a list of 1 or more device ids and globs' }, ...PUSH_FIELDS },
  required: ['devices', 'text'],
  additionalProperties: false,
  errorMessage: { ...BODY_MESSAGES, required: { devices: 'devices is required', text: 'text is required' } },
} as const;

/** `POST /devices/<id>/turns`: a turn started as if the device's user had said `text`. */
export const TURN_BODY_SCHEMA = {
  type: 'object',
  properties: { text: PUSH_FIELDS.text, hold_s: PUSH_FIELDS.hold_s },
  required: ['text'],
  additionalProperties: false,
  errorMessage: { ...BODY_MESSAGES, required: { text: 'text is required' } },
} as const;

/** Longest `wait_s` of `device_say`: the call stays open at most this long. */
export const DEVICE_SAY_MAX_WAIT_S = 300;

/** The `device_say` tool's arguments: one device by `device_id`, or many by `device_ids`. */
export const DEVICE_SAY_SCHEMA = {
  type: 'object',
  properties: {
    device_id: DEVICE_ID_PROPERTY,
    device_ids: { ...DEVICES_PROPERTY, description: `${DEVICES_PROPERTY.description}, instead of device_id` },
    ...PUSH_PROPERTIES,
    wait_s: {
      type: 'number',
      minimum: 0,
      maximum: DEVICE_SAY_MAX_WAIT_S,
      default: 0,
      description:
        "Keep the call open up to this many seconds, until each push's delivery receipt is final (spoken, interrupted, expired, refused); each change is reported as MCP progress when the call has a progress token, and the result gives every receipt's state",
    },
  },
  required: ['text'],
  additionalProperties: false,
} as const;

/** A push as the HTTP bodies and the tool give it. */
export interface PushBody {
  text: string;
  interrupt?: boolean;
  hold_s?: number;
}
