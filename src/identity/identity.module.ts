import { Module } from '@nestjs/common';
import { ProtectedResourceController } from './protected-resource.controller';

/**
 * The gateway as an OAuth 2.1 resource server: its protected resource metadata. (Checking JWT
 * access tokens is `AccessTokenService`'s, in the core, so every protocol has it.)
 */
@Module({ controllers: [ProtectedResourceController] })
export class IdentityModule {}
