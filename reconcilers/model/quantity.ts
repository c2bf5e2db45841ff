/**
 * Kubernetes resource quantities (`100m`, `1.5`, `64Mi`, `1G`, `1e3`) as numbers: CPU in millicores,
 * everything else in base units. Precision beyond a float's is not needed for what nodelet does
 * with them (QoS classes, cgroup limits).
 */
const BINARY: Readonly<Record<string, number>> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Readonly<Record<string, number>> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/** Thrown for a string that is not a quantity. */
export class InvalidQuantityError extends Error {
  constructor(readonly quantity: string) {
    super(`invalid quantity "${quantity}"`);
    this.name = 'InvalidQuantityError';
  }
}

/** Parses a quantity into base units. */
export function parseQuantity(quantity: string | number): number {
  if (typeof quantity === 'number') return quantity;
  const match = QUANTITY.exec(quantity.trim());
  if (match === null) throw new InvalidQuantityError(quantity);
  const [, num = '0', suffix = '', exponent] = match;
  const base = Number(num);
  if (exponent !== undefined) return base * 10 ** Number(exponent);
  return base * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}

/** Parses a CPU quantity into millicores, rounded up as the kubelet does. */
export function parseMilliCpu(quantity: string | number): number {
  return Math.ceil(parseQuantity(quantity) * 1000 - 1e-9);
}
