import type { ToolContentBlock } from './tool-definition';

/**
 * Return this from a handler to answer with content blocks in MCP's vocabulary (text, image,
 * audio, resource, resource_link) instead of one JSON value, optionally with the structured
 * value those blocks present. Upstream MCP tools answer this way, so their images and resources
 * reach MCP and LiteMCP clients as they were made. The registry unwraps it into
 * `ToolSuccess`: `content` is these blocks, and `value` the structured value, or the
 * blocks' text when there is none (so every reader of `value` still gets something meaningful).
 */
export class ToolContentResult {
  constructor(
    readonly content: ToolContentBlock[],
    readonly structuredContent?: Record<string, unknown>,
  ) {
    if (!Array.isArray(content) || content.some((block) => typeof block?.type !== 'string')) {
      throw new TypeError('ToolContentResult: content must be an array of blocks, each with a string "type"');
    }
  }
}

function describeBlock(block: ToolContentBlock): string {
  const mimeType = typeof block.mimeType === 'string' ? ` ${block.mimeType}` : '';
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? block.text : '';
    case 'image':
    case 'audio':
      return `[${block.type}${mimeType}]`;
    case 'resource': {
      const resource = (block.resource ?? {}) as Record<string, unknown>;
      if (typeof resource.text === 'string') return resource.text;
      return `[resource ${String(resource.uri ?? '')}]`;
    }
    case 'resource_link':
      return `[resource ${String(block.uri ?? '')}${typeof block.name === 'string' ? ` "${block.name}"` : ''}]`;
    default:
      return JSON.stringify(block);
  }
}

/**
 * Content blocks as one text, for readers that take nothing else (the model): text as it is,
 * embedded text resources by their text, and a short bracketed note for media and links, whose
 * bytes would mean nothing to a language model.
 */
export function textOfContent(blocks: readonly ToolContentBlock[]): string {
  return blocks
    .map(describeBlock)
    .filter((text) => text !== '')
    .join('\n');
}
