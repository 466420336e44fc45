import { Injectable } from '@nestjs/common';
import { Tool } from '../../core/tools/tool.decorator';
import { ToolError } from '../../core/tools/tool-error';

type Operation = 'add' | 'subtract' | 'multiply' | 'divide';

interface CalculatorArguments {
  a: number;
  b: number;
  operation: Operation;
}

/**
 * The LiteMCP spec's calculator, written the way a user writes tools: an injectable class with
 * a `@Tool()` method, in a module of its own (see `CalculatorModule`).
 */
@Injectable()
export class CalculatorTools {
  @Tool({
    name: 'calculator',
    presentation: { title: 'Calculator', annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false } },
    description: 'A simple calculator: adds, subtracts, multiplies or divides two numbers.',
    inputSchema: {
      type: 'object',
      properties: {
        a: { type: 'number', description: 'The first number', examples: [2] },
        b: { type: 'number', description: 'The second number', examples: [3] },
        operation: {
          type: 'string',
          enum: ['add', 'subtract', 'multiply', 'divide'],
          default: 'add',
          description: 'What to do with the two numbers',
        },
      },
      required: ['a', 'b'],
      additionalProperties: false,
    },
    outputSchema: { type: 'number' },
    examples: [{ description: 'Calculate the sum of 2 and 3', arguments: { a: 2, b: 3, operation: 'add' } }],
    tags: ['math', 'example'],
  })
  calculate({ a, b, operation }: CalculatorArguments): number {
    switch (operation) {
      case 'add':
        return a + b;
      case 'subtract':
        return a - b;
      case 'multiply':
        return a * b;
      case 'divide':
        if (b === 0) throw new ToolError('Division by zero');
        return a / b;
    }
  }
}
