import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { text, UpstreamTool } from './http-upstream';

const objectSchema = { type: 'object' as const, properties: {} };

/** Tools of an upstream (`HttpUpstream`) that, while a call runs, report progress, log, and ask its client things. */
export const RELAY_TOOLS: UpstreamTool[] = [
  {
    tool: { name: 'count', description: 'Counts to 3, reporting progress', inputSchema: objectSchema },
    run: async (_args, meta, extra) => {
      for (let step = 1; step <= 3; step++) {
        if (meta?.progressToken !== undefined) {
          await extra!.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: meta.progressToken as string, progress: step, total: 3 },
          });
        }
      }
      return text('counted');
    },
  },
  {
    tool: { name: 'chatty', description: 'Logs at two levels', inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      await extra!.sendNotification({ method: 'notifications/message', params: { level: 'debug', logger: 'chatty', data: 'a detail' } });
      await extra!.sendNotification({ method: 'notifications/message', params: { level: 'error', logger: 'chatty', data: { problem: 'a failure' } } });
      return text('logged');
    },
  },
  {
    tool: { name: 'ask_name', description: "Asks the user's name", inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
        },
        ElicitResultSchema,
      );
      return text(answer.action === 'accept' ? `Hello ${answer.content?.name}` : `no answer (${answer.action})`);
    },
  },
  {
    tool: { name: 'summarize', description: "Asks the client's model", inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest(
        { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Summarize' } }], maxTokens: 20 } },
        CreateMessageResultSchema,
      );
      return text(`model said: ${answer.content.type === 'text' ? answer.content.text : '?'}`);
    },
  },
];
