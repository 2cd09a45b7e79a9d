// Argument checks in sharp's habit: every check names the argument and says what it expected and what it received.

import { argumentError } from './errors';

export function checkInteger(name: string, value: unknown, min: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw argumentError(name, what, value);
  return value;
}

export const checkPositiveInteger = (name: string, value: unknown): number =>
  checkInteger(name, value, 1, 'a positive integer');

export const checkNonNegativeInteger = (name: string, value: unknown): number =>
  checkInteger(name, value, 0, 'a non-negative integer');

export function checkString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value === '') throw argumentError(name, 'a non-empty string', value);
  return value;
}

export function checkBoolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw argumentError(name, 'a boolean', value);
  return value;
}

export function checkStringArray(name: string, value: unknown): string[] {
  if (!Array.isArray(value)) throw argumentError(name, 'an array of strings', value);
  return value.map((v, i) => checkString(`${name}[${i}]`, v));
}

export function checkObject(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw argumentError(name, 'an object', value);
  return value as Record<string, unknown>;
}
