import { Injectable } from '@nestjs/common';
import { UpgradeContext, UpgradeGuard, UpgradeRefusedException } from '../core/ws/upgrade-guard';
import { LiteMcpService } from './litemcp.service';

/** `/litemcp/<tool>` for a tool the catalogue does not have is refused at the upgrade with 404. */
@Injectable()
export class LiteMcpToolPathGuard implements UpgradeGuard {
  constructor(private readonly liteMcp: LiteMcpService) {}

  canUpgrade({ params, principal }: UpgradeContext): void {
    if (!this.liteMcp.serves(params.tool, principal)) {
      throw new UpgradeRefusedException(404, `Unknown tool "${params.tool}"`);
    }
  }
}
