import { Module } from '@nestjs/common';
import { CatalogueController } from './catalogue.controller';

/** The tool catalogue as plain JSON over HTTP (`GET /tools`). */
@Module({ controllers: [CatalogueController] })
export class CatalogueModule {}
