/** Command-line values of the benchmarks. */
import { parseArgs } from 'node:util';

/** A comma-separated list of positive integers (`--sizes 30,110`); throws naming the flag otherwise. */
export function positiveInts(text: string, flag: string): number[] {
  const values = text.split(',').map((v) => Number.parseInt(v.trim(), 10));
  if (values.some((v) => !Number.isInteger(v) || v <= 0)) throw new Error(`${flag} wants positive integers, got ${text}`);
  return values;
}

/** The settings of a batch benchmark: sizes, rounds, and the document its results block goes into. */
export interface BatchBenchSettings {
  readonly sizes: readonly number[];
  readonly rounds: number;
  /** The document to write the results block into; undefined with `--no-doc` (printed only). */
  readonly doc: string | undefined;
  /** The command as run, for the results block (`npm run <script> -- <options>`). */
  readonly command: string;
}

/**
 * `[--sizes 30,110] [--rounds 3] [--doc PATH | --no-doc]` of the batch benchmarks started as
 * `npm run <script>`; the doc defaults to `defaultDoc`.
 */
export function parseBatchBenchSettings(argv: readonly string[], script: string, defaultDoc: string): BatchBenchSettings {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      sizes: { type: 'string', default: '30,110' },
      rounds: { type: 'string', default: '3' },
      doc: { type: 'string', default: defaultDoc },
      'no-doc': { type: 'boolean', default: false },
    },
  });
  const options = argv.filter((a) => a !== '--no-doc').join(' ');
  return {
    sizes: positiveInts(values.sizes, '--sizes'),
    rounds: positiveInts(values.rounds, '--rounds')[0] ?? 3,
    doc: values['no-doc'] ? undefined : values.doc,
    command: `npm run ${script}${options === '' ? '' : ` -- ${options}`}`,
  };
}
