import { Injectable } from '@nestjs/common';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';
import { CALL_TEMPLATE_PARAMETER_PROBLEM, callTemplateParameter, STREAM_PARAMETER_PROBLEM, streamParameter } from './request-endpoint';
import { UtcpService } from './utcp.service';

/**
 * Refuses, at the upgrade, a UTCP endpoint that does not exist: a bad `stream` parameter (400),
 * on `/utcp` a bad `call_template` (the manual its discovery frames answer with; 400), or on `/utcp/<tool>` a tool the catalogue lacks (404). The tool is looked up only for an
 * authenticated connection, so a client without a token learns nothing about which tools exist.
 */
@Injectable()
export class UtcpEndpointGuard implements UpgradeGuard {
  constructor(private readonly utcp: UtcpService) {}

  canUpgrade({ request, params, principal }: UpgradeContext): void {
    if (streamParameter(request.url) === undefined) throw new UpgradeRefusedException(400, STREAM_PARAMETER_PROBLEM);
    if (params.tool === undefined && callTemplateParameter(request.url) === undefined) {
      throw new UpgradeRefusedException(400, CALL_TEMPLATE_PARAMETER_PROBLEM);
    }
    if (params.tool !== undefined && principal !== undefined && !this.utcp.serves(params.tool, principal)) {
      throw new UpgradeRefusedException(404, `Unknown tool "${params.tool}"`);
    }
  }
}
