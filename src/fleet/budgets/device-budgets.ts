import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../../core/audit/audit.service';
import { BudgetLimits, readBudgetLimits } from '../../core/budgets/budget-limits';
import { BudgetService, UsageView } from '../../core/budgets/budget.service';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { isPlainObject } from '../../core/plain-object';
import type { FleetCaller } from '../device-push';
import { FLEET_STORES, FleetStores } from '../fleet-stores';
import { checkDeviceId } from '../reachability';

/** A device's usage as the API and the `device_usage` tool show it. */
export interface DeviceUsageView {
  device: string;
  /** Budgets run over UTC calendar days and months. */
  periods: 'UTC';
  usage: UsageView;
}

/** A device's limits as its owner set them, and those that apply (the stricter of the owner's and the tokens file's `per_device`). */
export interface DeviceBudgetView {
  device: string;
  budget: BudgetLimits;
  effective: BudgetLimits;
}

/**
 * A device's budget for its owner: its usage against its limits, and the limits the owner sets.
 * Only the owner (the principal the directory says owns the id) and internal callers see or
 * change them; to anyone else the device does not exist (`NOT_FOUND`), as for `release`, so no
 * one learns which ids are taken.
 */
@Injectable()
export class DeviceBudgets {
  constructor(
    private readonly budgets: BudgetService,
    private readonly audit: AuditService,
    @Inject(FLEET_STORES) private readonly stores: FleetStores,
  ) {}

  async usage(deviceId: string, caller: FleetCaller): Promise<DeviceUsageView> {
    const owner = await this.ownedBy(deviceId, caller);
    return { device: deviceId, periods: 'UTC', usage: await this.budgets.deviceUsage(deviceId, owner) };
  }

  async budget(deviceId: string, caller: FleetCaller): Promise<DeviceBudgetView> {
    const owner = await this.ownedBy(deviceId, caller);
    return this.view(deviceId, owner);
  }

  /** Replaces the owner's limits of the device with `body` (`{}` clears them); `INVALID_MESSAGE` naming every bad key. */
  setBudget(deviceId: string, body: unknown, caller: FleetCaller): Promise<DeviceBudgetView> {
    const details = isPlainObject(body) ? Object.keys(body).join(', ').slice(0, 200) || 'cleared' : undefined;
    return this.audit.auditedFleetChange({ principal: caller.principal, action: 'budget_set', target: deviceId, details }, async () => {
      const owner = await this.ownedBy(deviceId, caller);
      const problems: string[] = [];
      const limits = readBudgetLimits(body, 'budget', (problem) => problems.push(problem));
      if (problems.length > 0) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Invalid budget: ${problems.join('; ')}`);
      await this.budgets.setOwnerLimits(deviceId, limits);
      return this.view(deviceId, owner);
    });
  }

  private async view(deviceId: string, owner: string): Promise<DeviceBudgetView> {
    const [budget, { device: effective }] = await Promise.all([this.budgets.ownerLimits(deviceId), this.budgets.limitsFor({ principal: owner, deviceId })]);
    return { device: deviceId, budget, effective };
  }

  /** The owner of `deviceId` when `caller` is it (or internal); `NOT_FOUND` otherwise. */
  private async ownedBy(deviceId: string, caller: FleetCaller): Promise<string> {
    checkDeviceId(deviceId);
    const owner = await this.stores.directory.owner(deviceId);
    if (owner === undefined || (caller.principal !== undefined && caller.principal !== owner))
      throw new GatewayError(GatewayErrorCode.NOT_FOUND, `No device "${deviceId}" of yours`);
    return owner;
  }
}
