#!/usr/bin/env node
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { parseArgs } from 'util';
import { AppModule } from '../../app.module';
import { StartupError } from '../../shared/startup-error';
import { GATEWAY_CONFIG, GatewayConfig, logSettingsFrom } from '../../config/gateway-config';
import { GatewayLogger } from '../../core/logging/gateway-logger';
import { ToolRegistryService } from '../../core/tools/tool-registry.service';
import { LiteMcpGateway } from '../litemcp.gateway';
import { LiteMcpStdioServer } from './litemcp-stdio.server';

const USAGE = `Usage: litemcp-stdio --tool <name>

Serves one tool of the gateway's catalogue as LiteMCP over standard IO: requests on stdin,
answers on stdout, each ended by three newlines. Logs go to stderr. Configuration is read from
the environment, as for the gateway. --list prints the tool names and exits.`;

/** Runs the stdio server until stdin ends; returns the process exit code. */
async function main(argv: string[]): Promise<number> {
  let options: { tool?: string; list?: boolean; help?: boolean };
  try {
    options = parseArgs({
      args: argv,
      options: { tool: { type: 'string' }, list: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  if (!options.tool && !options.list) {
    process.stderr.write(`Missing --tool <name>\n\n${USAGE}\n`);
    return 2;
  }

  const early = new GatewayLogger(logSettingsFrom(process.env), { stderrOnly: true });
  const app = await NestFactory.createApplicationContext(AppModule, { logger: early, bufferLogs: true, abortOnError: false });
  try {
    const config = app.get<GatewayConfig>(GATEWAY_CONFIG);
    app.useLogger(new GatewayLogger(config.server, { stderrOnly: true }));
    const registry = app.get(ToolRegistryService);
    if (options.list) {
      process.stdout.write(
        `${registry
          .list()
          .map((tool) => tool.name)
          .join('\n')}\n`,
      );
      return 0;
    }
    if (!registry.get(options.tool!)) {
      process.stderr.write(
        `Unknown tool "${options.tool}". Available: ${registry
          .list()
          .map((t) => t.name)
          .join(', ')}\n`,
      );
      return 2;
    }
    const server = new LiteMcpStdioServer(app.get(LiteMcpGateway), options.tool!, config.server.maxMessageBytes);
    await server.serve(process.stdin, process.stdout);
    return 0;
  } finally {
    await app.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`${error instanceof StartupError ? error.message : (error as Error).stack}\n`);
    process.exitCode = 1;
  },
);
