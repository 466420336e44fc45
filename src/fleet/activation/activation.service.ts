import { AuditService } from '../../core/audit/audit.service';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { AccessTokenService } from '../../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { RateLimitedError } from '../../core/limits/rate-limited.error';
import type { RateLimiter } from '../../core/limits/rate-limiter';
import { MetricsService, type ActivationOutcome } from '../../metrics/metrics.service';
import { checkDeviceId } from '../reachability';
import { FLEET_STORES, FleetStores } from '../fleet-stores';
import { drawChallenge, drawCode, drawDeviceSecret, hmacMatches, isCode, secretHash } from './activation-codes';
import { ACTIVATION_LIMITER, ACTIVATION_STORE, type ActivationStore, type PendingActivation } from './activation-store';
import { DeviceCredentialSessions } from './device-credential-sessions';

/** What a device said of itself when it asked for its configuration. */
export interface ActivationRequest {
  deviceId: string;
  /** `Client-Id`; '' when it sent none. */
  clientId: string;
  /** `Serial-Number`, with `Activation-Version: 2`. */
  serial?: string;
  /** Its source address, for the per-address limit of codes handed out. */
  address?: string;
}

/** The `activation` section of a configuration answer, in the firmware's field names. */
export interface ActivationSection {
  /** Absent once bound, while a serial-number device still has to answer its challenge. */
  code?: string;
  message: string;
  challenge: string;
  timeout_ms: number;
}

/**
 * What a device's configuration answer says about its credential: activate first (no credential),
 * here is your new secret (given once), or nothing (it keeps the secret it stored).
 */
export type CredentialDecision = { activation: ActivationSection } | { secret: string } | { keep: true };

/** What the firmware's polling of `<ota>/activate` is answered: 200 bound, 202 not yet. */
export type PollAnswer = 200 | 202;

/** The owner who binds, and where the attempt came from (for the limits). */
export interface Activator {
  principal?: string;
  address?: string;
}

/** Draws of a code before giving up on finding a free one (a million codes: a collision is rare). */
const MAX_CODE_DRAWS = 8;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** The answer to every code that binds nothing: the same words whatever the reason, so a guess learns nothing. */
const WRONG_CODE = () => new GatewayError(GatewayErrorCode.NOT_FOUND, 'No device is waiting for this activation code');

/**
 * Device activation (`XIAOZHI_ACTIVATION=required`) and a credential per device.
 *
 * An unbound device asking for its configuration is handed a six-digit code (the same one while it
 * lives), tied to its `Device-Id` and `Client-Id`, which it speaks. Its owner enters the code with
 * their own token ({@link activate}): the code is taken (it binds once), and the id becomes the
 * owner's in the device directory for good. The device's next configuration answer, asked by the
 * client the code was handed to, carries its own secret, generated then and stored only as a
 * SHA-256; later answers carry none, so the secret travels once. The secret authenticates the
 * device's connections as its owner's principal, that device only, device protocols only
 * (`AccessTokenService.authenticateUpgrade`). Serial-number devices also prove their eFuse key:
 * the HMAC of their challenge under the key an operator provisioned ({@link setKey}).
 *
 * Guessing is bounded by three limits on attempts (per address and gateway-wide per minute, per
 * principal per hour), every attempt counted in `gateway_device_activations_total`.
 */
@Injectable()
export class ActivationService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Activation');
  private readonly settings: NonNullable<GatewayConfig['xiaozhi']['activation']>;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    @Inject(ACTIVATION_STORE) private readonly store: ActivationStore,
    @Inject(ACTIVATION_LIMITER) private readonly limiter: RateLimiter,
    @Inject(FLEET_STORES) private readonly fleet: FleetStores,
    private readonly tokens: AccessTokenService,
    private readonly sessions: DeviceCredentialSessions,
    private readonly audit: AuditService,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    this.settings = config.xiaozhi.activation ?? { codeTtlMs: 0, attemptsPerAddress: 0, attemptsGlobal: 0, attemptsPerPrincipal: 0, codesPerAddress: 0 };
    this.enabled = config.xiaozhi.activation !== undefined;
  }

  /** Whether activation is required (`XIAOZHI_ACTIVATION=required`). */
  readonly enabled: boolean;

  onModuleInit(): void {
    if (!this.enabled) return;
    this.tokens.useDeviceCredentials(async (secret) => this.store.deviceOfSecret(secretHash(secret)));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }

  /** The device a secret is the current credential of (an MQTT password, say), if any. */
  async deviceOfSecret(secret: string): Promise<string | undefined> {
    return (await this.store.deviceOfSecret(secretHash(secret)))?.deviceId;
  }

  /**
   * What a device's configuration answer says about its credential. An unbound device gets its
   * code (a new one past the per-address limit is refused: `RATE_LIMITED`); a bound one its new
   * secret when one is due to the client it was activated as, else nothing to store.
   */
  async credentialFor(request: ActivationRequest): Promise<CredentialDecision> {
    const binding = await this.store.binding(request.deviceId);
    if (binding) {
      if (binding.needsProof && binding.clientId === request.clientId) return { activation: this.section(binding.challenge) };
      const secret = drawDeviceSecret();
      if (await this.store.issueSecret(request.deviceId, request.clientId, secretHash(secret))) {
        this.logger.log(`Device ${request.deviceId}: its own credential was issued to it`);
        return { secret };
      }
      return { keep: true };
    }
    const pending = (await this.store.pending(request.deviceId, request.clientId)) ?? (await this.openCode(request));
    return { activation: this.section(pending.challenge, pending.code) };
  }

  /**
   * The firmware's polling of `<ota>/activate`: 200 once its owner bound it (and, for a
   * serial-number device, once it answered its challenge), 202 while it waits. A wrong HMAC is
   * `FORBIDDEN`; a device with nothing under way `NOT_FOUND` (it asks for its configuration again).
   */
  async poll(deviceId: string, clientId: string, payload: Record<string, unknown>): Promise<PollAnswer> {
    const binding = await this.store.binding(deviceId);
    if (binding && binding.clientId === clientId) {
      if (!binding.serial) return 200;
      await this.checkProof(deviceId, binding.challenge, payload);
      if (binding.needsProof) await this.store.proveBinding(deviceId);
      return 200;
    }
    const pending = await this.store.pending(deviceId, clientId);
    if (!pending) throw new GatewayError(GatewayErrorCode.NOT_FOUND, 'No activation is under way for this device: ask for the configuration again');
    if (pending.serial !== undefined && !pending.proven) {
      await this.checkProof(deviceId, pending.challenge, payload);
      await this.store.provePending(pending);
    }
    return 202;
  }

  /**
   * The owner enters the code their device speaks: the device becomes theirs for good. Every
   * wrong, expired or spent code gets the same `NOT_FOUND`; past a limit, `RATE_LIMITED`.
   */
  activate(code: unknown, caller: Activator): Promise<{ deviceId: string }> {
    return this.audit.auditedFleetChange(
      { principal: caller.principal, action: 'device_activate', target: 'a code' },
      () => this.bindByCode(code, caller),
      (done) => done.deviceId,
    );
  }

  private async bindByCode(code: unknown, caller: Activator): Promise<{ deviceId: string }> {
    const principal = this.ownerOf(caller);
    await this.spendAttempt(principal, caller.address);
    if (!isCode(code)) {
      this.count('wrong_code');
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'An activation code is the 6 digits the device speaks');
    }
    const pending = await this.store.takeCode(code);
    if (!pending) {
      this.count('wrong_code');
      throw WRONG_CODE();
    }
    if ((await this.fleet.directory.bind(pending.deviceId, principal)) === 'taken') {
      this.count('taken');
      throw new GatewayError(GatewayErrorCode.DEVICE_ID_TAKEN, `Device "${pending.deviceId}" belongs to another owner; they can unbind it`);
    }
    await this.store.putBinding({
      deviceId: pending.deviceId,
      principal,
      clientId: pending.clientId,
      boundAt: new Date().toISOString(),
      challenge: pending.challenge,
      serial: pending.serial !== undefined,
      needsProof: pending.serial !== undefined && !pending.proven,
      issue: true,
    });
    this.count('bound');
    this.logger.log(`Device ${pending.deviceId} was activated by ${principal}`);
    return { deviceId: pending.deviceId };
  }

  /** The owner asks for a new secret: the device's next configuration answer carries it (the current one works until then). */
  rotate(deviceId: string, caller: Activator): Promise<void> {
    return this.audited('credential_rotate', deviceId, caller, async () => {
      if (!(await this.store.rotate(checkDeviceId(deviceId), this.ownerOf(caller)))) throw notYours(deviceId);
    });
  }

  /** The owner drops the device's secret: it no longer authenticates, and its connections close on every replica. A new one only by {@link rotate}. */
  revoke(deviceId: string, caller: Activator): Promise<void> {
    return this.audited('credential_revoke', deviceId, caller, async () => {
      if (!(await this.store.revoke(checkDeviceId(deviceId), this.ownerOf(caller)))) throw notYours(deviceId);
      await this.sessions.closeEverywhere(deviceId);
    });
  }

  /** The owner unbinds the device: its secret goes, its credential's connections close, and its id is free once it is offline. */
  unbind(deviceId: string, caller: Activator): Promise<void> {
    return this.audited('device_unbind', deviceId, caller, async () => {
      const principal = this.ownerOf(caller);
      if (!(await this.store.unbind(checkDeviceId(deviceId), principal))) throw notYours(deviceId);
      await this.fleet.directory.unbind(deviceId, principal);
      await this.sessions.closeEverywhere(deviceId);
    });
  }

  /** An operator provisions a serial-number device's HMAC key (its eFuse key 0), 32 bytes as hex. */
  setKey(deviceId: string, keyHex: string, caller: Activator): Promise<void> {
    return this.audited('activation_key_set', deviceId, caller, () => this.store.setKey(checkDeviceId(deviceId), Buffer.from(keyHex, 'hex')));
  }

  /** A change of a device's binding or credential, audited (never with a secret or a code). */
  private audited(action: string, deviceId: string, caller: Activator, change: () => Promise<void>): Promise<void> {
    return this.audit.auditedFleetChange({ principal: caller.principal, action, target: deviceId }, change);
  }

  private async openCode(request: ActivationRequest): Promise<PendingActivation> {
    if (request.address !== undefined)
      await this.limit(`activation:codes:${request.address}`, 'activation codes from one address', this.settings.codesPerAddress, MINUTE_MS);
    for (let draw = 0; draw < MAX_CODE_DRAWS; draw++) {
      const candidate: PendingActivation = {
        code: drawCode(),
        deviceId: request.deviceId,
        clientId: request.clientId,
        challenge: drawChallenge(),
        ...(request.serial !== undefined && { serial: request.serial }),
        proven: false,
      };
      const opened = await this.store.openPending(candidate, this.settings.codeTtlMs);
      if (opened === 'opened') {
        this.count('code_issued');
        return candidate;
      }
      if (opened === 'full') break;
    }
    throw new GatewayError(GatewayErrorCode.RATE_LIMITED, 'Too many activations are under way: try again later');
  }

  private section(challenge: string, code?: string): ActivationSection {
    return {
      ...(code !== undefined && { code }),
      message: code !== undefined ? `Activation code ${code}: enter it to bind this device to your account` : 'Activating this device',
      challenge,
      timeout_ms: this.settings.codeTtlMs,
    };
  }

  private async checkProof(deviceId: string, challenge: string, payload: Record<string, unknown>): Promise<void> {
    const key = await this.store.key(deviceId);
    if (key && payload.challenge === challenge && hmacMatches(key, challenge, payload.hmac)) return;
    this.count('hmac_refused');
    this.logger.warn(`Device ${deviceId}: its activation challenge was answered wrongly${key ? '' : ' (no activation key is provisioned for it)'}`);
    throw new GatewayError(GatewayErrorCode.FORBIDDEN, 'The activation challenge was not answered with the HMAC of this device');
  }

  /** One attempt, counted against the caller's address, the gateway's minute and the principal's hour. */
  private async spendAttempt(principal: string, address: string | undefined): Promise<void> {
    if (address !== undefined)
      await this.limit(`activation:address:${address}`, 'activation attempts from one address', this.settings.attemptsPerAddress, MINUTE_MS);
    await this.limit('activation:everyone', 'activation attempts gateway-wide', this.settings.attemptsGlobal, MINUTE_MS);
    await this.limit(`activation:principal:${principal}`, 'activation attempts of one token', this.settings.attemptsPerPrincipal, HOUR_MS);
  }

  private async limit(key: string, what: string, limit: number, windowMs: number): Promise<void> {
    const decision = await this.limiter.hit(key, limit, windowMs);
    if (decision.allowed) return;
    this.count('rate_limited');
    throw new RateLimitedError(what, limit, windowMs, decision.retryAfterMs);
  }

  private ownerOf(caller: Activator): string {
    if (!this.enabled) throw new GatewayError(GatewayErrorCode.NOT_FOUND, 'Device activation is off (XIAOZHI_ACTIVATION)');
    if (caller.principal === undefined) throw new GatewayError(GatewayErrorCode.FORBIDDEN, "Activation binds a device to its owner's token: call with one");
    return caller.principal;
  }

  private count(outcome: ActivationOutcome): void {
    this.metrics?.activation(outcome);
  }
}

function notYours(deviceId: string): GatewayError {
  return new GatewayError(GatewayErrorCode.NOT_FOUND, `No activated device "${deviceId}" of yours`);
}
