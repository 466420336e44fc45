import type { DynamicModule, Type } from '@nestjs/common';
import type { EnvironmentInput } from '../../src/config/environment';
import { CalculatorModule } from '../../src/examples/calculator/calculator.module';
import { FakeOpenMeteo } from './fake-open-meteo';
import { RunningGateway, startGateway } from './gateway';
import { ScriptedLlm } from './scripted-llm';
import { TestSocket } from './test-socket';

export interface LlmStack {
  llm: ScriptedLlm;
  weather: FakeOpenMeteo;
  gateway: RunningGateway;
  /** A connected client that has read its `status: connected` frame. */
  connect(path?: string, headers?: Record<string, string>): Promise<LlmClient>;
  close(): Promise<void>;
}

/** A test socket on the LLM gateway, with the session it was given. */
export interface LlmClient extends TestSocket {
  sessionId: string;
  /** Reads frames until one of `type` (and `status`, for status frames); returns them all, that one last. */
  until(type: string, status?: string): Promise<any[]>;
}

/**
 * The gateway wired to a scripted model and a fake Open-Meteo, both on 127.0.0.1: what every
 * LLM-gateway test starts from. Retries are off and timeouts short, so faults show at once.
 */
export async function startLlmStack(settings: EnvironmentInput = {}, imports: (Type<unknown> | DynamicModule)[] = [CalculatorModule]): Promise<LlmStack> {
  const llm = await ScriptedLlm.start();
  const weather = await FakeOpenMeteo.start();
  const gateway = await startGateway(
    {
      LLM_BASE_URL: llm.baseUrl,
      LLM_MAX_RETRIES: 0,
      LLM_TIMEOUT: 5,
      DEFAULT_TIMEZONE: 'Asia/Shanghai',
      ...weather.settings,
      ...settings,
    },
    imports,
  ).catch(async (error: unknown) => {
    await Promise.all([llm.close(), weather.close()]);
    throw error;
  });
  return {
    llm,
    weather,
    gateway,
    connect: async (path = '/', headers = {}) => {
      const socket = (await TestSocket.open(gateway.ws(path), { headers })) as LlmClient;
      const connected = await socket.next();
      if (connected.type !== 'status' || connected.status !== 'connected') {
        throw new Error(`Expected status connected, got ${JSON.stringify(connected)}`);
      }
      socket.sessionId = connected.data.session_id;
      socket.until = async (type, status) => {
        const frames: any[] = [];
        for (;;) {
          const frame = await socket.next(8000);
          frames.push(frame);
          if (frame.type === type && (status === undefined || frame.status === status)) return frames;
        }
      };
      return socket;
    },
    close: async () => {
      await gateway.close();
      await llm.close();
      await weather.close();
    },
  };
}
