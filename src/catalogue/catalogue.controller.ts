import { Controller, Get, Req } from '@nestjs/common';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { Catalogue, toCatalogueEntry } from './catalogue.mapper';

/**
 * `GET /tools`: every shared tool with its source and schemas, read-only, behind the shared
 * bearer check. The same catalogue MCP's `tools/list` and LiteMCP's `GET` already show the same
 * callers, in one request and with the source of each tool; the web console lists it.
 * Client tools of LLM-gateway connections are their connection's alone and are not listed; a
 * named token of the tokens file sees only the tools its `tools` patterns match.
 */
@Controller('tools')
export class CatalogueController {
  constructor(private readonly registry: ToolRegistryService) {}

  @Get()
  list(@Req() request: AuthenticatedRequest): Catalogue {
    return { tools: this.registry.list(undefined, request.principal, 'agent').map(toCatalogueEntry) };
  }
}
