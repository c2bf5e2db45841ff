import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FlagError, formatUsage, INT32_MAX, isFlagError, oneOf, parseFlags, parseInt32, positiveInteger, secondsOrDuration, type FlagSpecs } from './flags.js';

const FLAGS = {
  'redis-url': { type: 'string', value: 'URL', env: 'REDIS_URL', default: 'redis://127.0.0.1:6379', description: 'Redis' },
  'node-name': { type: 'string', value: 'NAME', env: 'NODE_NAME', defaultText: 'the host name', description: 'the Node' },
  'token-file': { type: 'string', value: 'PATH', description: 'token file' },
  'register-with-taints': { type: 'string', value: 'K=V:EFFECT,...', default: '', description: 'taints' },
  'no-auth': { type: 'boolean', description: 'no authentication' },
} as const satisfies FlagSpecs;

function parse(argv: string[], env: NodeJS.ProcessEnv = {}, allowPositionals = false) {
  const values = parseFlags(FLAGS, { argv, env, allowPositionals });
  assert.notEqual(values, 'help');
  return values as Exclude<typeof values, 'help'>;
}

function flagError(argv: string[]): FlagError {
  try {
    parseFlags(FLAGS, { argv, env: {} });
  } catch (error) {
    assert.ok(isFlagError(error), `expected a FlagError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the flags to be refused');
}

describe('parseFlags', () => {
  it('reads --flag value and --flag=value alike', () => {
    assert.equal(parse(['--redis-url', 'redis://a:1'])['redis-url'], 'redis://a:1');
    assert.equal(parse(['--redis-url=redis://b:2'])['redis-url'], 'redis://b:2');
    assert.equal(parse(['--register-with-taints=a=b:NoSchedule'])['register-with-taints'], 'a=b:NoSchedule', 'only the first = splits');
  });

  it('takes a negative number after a string flag as its value, as pflag does, and nothing else that starts with a dash', () => {
    assert.equal(parse(['--token-file', '-1', '--no-auth'])['token-file'], '-1');
    assert.equal(parse(['--token-file', '-1'])['no-auth'], false);
    assert.match(flagError(['--token-file', '-x']).message, /token-file/);
    assert.match(flagError(['--no-auth', '-1']).message, /-1/);
  });

  it('reads a boolean as given or not, and refuses a value for it', () => {
    assert.equal(parse(['--no-auth'])['no-auth'], true);
    assert.equal(parse([])['no-auth'], false);
    assert.match(flagError(['--no-auth=yes']).message, /no-auth/);
  });

  it("reads a boolean written the kubelet's way, --flag=true or --flag=false", () => {
    assert.equal(parse(['--no-auth=true'])['no-auth'], true);
    assert.equal(parse(['--no-auth=false'])['no-auth'], false);
    assert.equal(parse(['--no-auth', '--no-auth=false'])['no-auth'], true, 'a switch once given stays given');
    assert.equal(parse(['--redis-url=true'])['redis-url'], 'true', 'a string flag keeps its value');
  });

  it('takes the flag over the environment, the environment over the default', () => {
    const env = { REDIS_URL: 'redis://env:1', NODE_NAME: 'env-node' };
    assert.equal(parse(['--redis-url', 'redis://flag:1'], env)['redis-url'], 'redis://flag:1');
    assert.equal(parse([], env)['redis-url'], 'redis://env:1');
    assert.equal(parse([])['redis-url'], 'redis://127.0.0.1:6379');
    assert.equal(parse([], env)['node-name'], 'env-node');
    assert.equal(parse([])['node-name'], undefined, 'no default: the command computes one');
  });

  it('counts a blank variable as unset but takes an explicitly empty flag as is', () => {
    assert.equal(parse([], { REDIS_URL: '' })['redis-url'], 'redis://127.0.0.1:6379');
    assert.equal(parse([], { REDIS_URL: '  ' })['redis-url'], 'redis://127.0.0.1:6379');
    assert.equal(parse(['--redis-url', ''], { REDIS_URL: 'redis://env:1' })['redis-url'], '');
  });

  it('reads no environment variable for a flag that names none', () => {
    assert.equal(parse([], { TOKEN_FILE: '/t', 'token-file': '/t' })['token-file'], undefined);
  });

  it('reports unknown flags, missing values and stray arguments as FlagErrors', () => {
    assert.match(flagError(['--bogus']).message, /bogus/);
    assert.match(flagError(['--redis-url']).message, /redis-url/);
    assert.match(flagError(['extra']).message, /extra/);
  });

  it('ignores stray arguments when the command allows them', () => {
    assert.equal(parse(['extra', '--no-auth'], {}, true)['no-auth'], true);
  });

  it('answers help for -h and --help, whatever else is given', () => {
    assert.equal(parseFlags(FLAGS, { argv: ['-h'], env: {} }), 'help');
    assert.equal(parseFlags(FLAGS, { argv: ['--redis-url', 'x', '--help'], env: {} }), 'help');
  });
});

describe('formatUsage', () => {
  const usage = formatUsage(FLAGS, { synopsis: 'nodelet test [flags]', summary: 'Tests.', notes: 'A note.\n' });

  it('lists every flag with its value, description, variable and default, and help', () => {
    const lines = usage.split('\n');
    assert.equal(lines[0], 'Usage: nodelet test [flags]');
    assert.ok(lines.includes('  --redis-url URL          Redis [REDIS_URL]; default redis://127.0.0.1:6379'), usage);
    assert.ok(lines.includes('  --node-name NAME         the Node [NODE_NAME]; default the host name'), usage);
    assert.ok(lines.includes('  --token-file PATH        token file'), usage);
    assert.ok(lines.includes('  --no-auth                no authentication'), usage);
    assert.ok(lines.includes('  -h, --help               this text'), usage);
    assert.ok(usage.endsWith('\nA note.\n'));
  });

  it('puts the description of a long flag on the next line, and shows no empty default', () => {
    const at = usage.split('\n').indexOf('  --register-with-taints K=V:EFFECT,...');
    assert.notEqual(at, -1, usage);
    assert.equal(usage.split('\n')[at + 1], `${' '.repeat(27)}taints`);
  });
});

describe('flag value checks', () => {
  it('accepts positive integers only, naming the flag', () => {
    assert.equal(positiveInteger('concurrency', '8'), 8);
    for (const bad of ['0', '-1', '1.5', 'four', '']) {
      assert.throws(() => positiveInteger('concurrency', bad), (err: unknown) => isFlagError(err) && err.message.includes('--concurrency must be a positive integer'));
    }
  });

  it("accepts seconds or the kubelet's durations, naming the flag", () => {
    assert.equal(secondsOrDuration('image-minimum-gc-age', '120', 86400), 120);
    assert.equal(secondsOrDuration('image-minimum-gc-age', '2m', 86400), 120);
    assert.equal(secondsOrDuration('image-minimum-gc-age', '1m30s', 86400), 90);
    assert.equal(secondsOrDuration('image-minimum-gc-age', '0', 86400), 0);
    for (const bad of ['-1s', '25h', 'soon', '1.5', '']) {
      assert.throws(() => secondsOrDuration('image-minimum-gc-age', bad, 86400), (err: unknown) => isFlagError(err) && err.message.startsWith('--image-minimum-gc-age must be seconds or a duration'), bad);
    }
  });

  it('accepts one of a set, naming the flag and the choices', () => {
    assert.equal(oneOf('log-level', 'debug', ['info', 'debug']), 'debug');
    assert.throws(() => oneOf('log-level', 'loud', ['info', 'debug']), (err: unknown) => isFlagError(err) && err.message === '--log-level must be one of info|debug, got "loud"');
  });

  it('recognises subclasses as flag errors', () => {
    class SpecificFlagError extends FlagError {}
    assert.equal(isFlagError(new SpecificFlagError('x')), true);
    assert.equal(isFlagError(new TypeError('x')), false);
  });
});

describe('parseInt32', () => {
  it('reads decimal integers in int32 range, as the kubelet int32 flags', () => {
    assert.deepEqual(['0', '7', '-1', '2147483647', '-2147483648', '007'].map(parseInt32), [0, 7, -1, INT32_MAX, -INT32_MAX - 1, 7]);
  });

  it('refuses anything else: out of range, fractions, signs but -, blanks, words', () => {
    assert.deepEqual(['2147483648', '-2147483649', '1.5', '+3', '', ' 1', '1e3', 'ten'].map(parseInt32), Array(8).fill(undefined));
  });
});
