/**
 * A local stand-in for `jsr:@std/assert` with the same names and call shapes, implemented over
 * `node:assert/strict`. JSR is not reachable from this project's machines; switching back is a
 * one-line change of the import map.
 *
 * @module
 */
import nodeAssert from "node:assert/strict";

/** Thrown when an assertion fails. */
export class AssertionError extends Error {
  /** Creates an assertion error with a message. */
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

function wrap(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    if (error instanceof nodeAssert.AssertionError) throw new AssertionError(error.message);
    throw error;
  }
}

/** Asserts that `actual` and `expected` are deeply equal. */
export function assertEquals<T>(actual: T, expected: T, msg?: string): void {
  wrap(() => nodeAssert.deepStrictEqual(actual, expected, msg));
}

/** Asserts that `actual` and `expected` are not deeply equal. */
export function assertNotEquals<T>(actual: T, expected: T, msg?: string): void {
  wrap(() => nodeAssert.notDeepStrictEqual(actual, expected, msg));
}

/** Asserts that `actual` and `expected` are the same value (`Object.is`). */
export function assertStrictEquals<T>(actual: unknown, expected: T, msg?: string): void {
  wrap(() => nodeAssert.strictEqual(actual, expected, msg));
}

/** Asserts that `actual` and `expected` are not the same value (`Object.is`). */
export function assertNotStrictEquals<T>(actual: T, expected: T, msg?: string): void {
  wrap(() => nodeAssert.notStrictEqual(actual, expected, msg));
}

/** Asserts that `expr` is truthy. */
export function assert(expr: unknown, msg = "Expected expression to be truthy"): asserts expr {
  if (!expr) throw new AssertionError(msg);
}

/** Asserts that `actual` is not null or undefined. */
export function assertExists<T>(actual: T, msg?: string): asserts actual is NonNullable<T> {
  if (actual === null || actual === undefined) {
    throw new AssertionError(msg ?? `Expected actual: "${actual}" to not be null or undefined.`);
  }
}

/** Asserts that the string `actual` contains `expected`. */
export function assertStringIncludes(actual: string, expected: string, msg?: string): void {
  if (!actual.includes(expected)) {
    throw new AssertionError(msg ?? `Expected actual: "${actual}" to contain: "${expected}".`);
  }
}

/** Asserts that `actual` matches the regular expression `expected`. */
export function assertMatch(actual: string, expected: RegExp, msg?: string): void {
  if (!expected.test(actual)) {
    throw new AssertionError(msg ?? `Expected actual: "${actual}" to match: "${expected}".`);
  }
}

/** Asserts that `actual` is an instance of `expectedType`. */
export function assertInstanceOf<T extends abstract new (...args: never[]) => unknown>(
  actual: unknown,
  expectedType: T,
  msg?: string,
): asserts actual is InstanceType<T> {
  if (!(actual instanceof expectedType)) {
    throw new AssertionError(
      msg ?? `Expected object to be an instance of "${expectedType.name}".`,
    );
  }
}

/** Asserts that `actual` is less than or equal to `expected`. */
export function assertLessOrEqual<T>(actual: T, expected: T, msg?: string): void {
  if (!(actual <= expected)) {
    throw new AssertionError(msg ?? `Expect ${actual} <= ${expected}`);
  }
}

/** Asserts that `actual` is greater than or equal to `expected`. */
export function assertGreaterOrEqual<T>(actual: T, expected: T, msg?: string): void {
  if (!(actual >= expected)) {
    throw new AssertionError(msg ?? `Expect ${actual} >= ${expected}`);
  }
}

/** Always fails, with `msg`. */
export function fail(msg?: string): never {
  throw new AssertionError(`Failed assertion${msg ? `: ${msg}` : "."}`);
}

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

function checkError<E extends Error>(
  error: unknown,
  ErrorClass?: ErrorClass<E>,
  msgIncludes?: string,
): E {
  if (ErrorClass && !(error instanceof ErrorClass)) {
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new AssertionError(
      `Expected error to be instance of "${ErrorClass.name}", but was "${name}": ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
  if (msgIncludes !== undefined) {
    const message = error instanceof Error ? error.message : String(error);
    if (!message.includes(msgIncludes)) {
      throw new AssertionError(
        `Expected error message to include "${msgIncludes}", but got "${message}".`,
      );
    }
  }
  return error as E;
}

/** Executes `fn`, expects it to throw, and returns the error. */
export function assertThrows<E extends Error = Error>(
  fn: () => unknown,
  ErrorClass?: ErrorClass<E>,
  msgIncludes?: string,
  msg?: string,
): E {
  try {
    fn();
  } catch (error) {
    return checkError(error, ErrorClass, msgIncludes);
  }
  throw new AssertionError(msg ?? "Expected function to throw.");
}

/** Awaits `fn()`, expects it to reject, and returns the error. */
export async function assertRejects<E extends Error = Error>(
  fn: () => PromiseLike<unknown>,
  ErrorClass?: ErrorClass<E>,
  msgIncludes?: string,
  msg?: string,
): Promise<E> {
  try {
    await fn();
  } catch (error) {
    return checkError(error, ErrorClass, msgIncludes);
  }
  throw new AssertionError(msg ?? "Expected function to reject.");
}
