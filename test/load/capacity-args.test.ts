/** The command line of bench:capacity. */
import { describe, expect, it } from 'vitest';
import { parseCapacityArgs } from '../../bench/capacity-args.js';
import { parseTarget } from '../../bench/capacity-lib.js';

describe('bench:capacity arguments', () => {
  it('runs echo-delayed beside the bridge and the echo by default, with a rung at 200 calls, unpinned', () => {
    const a = parseCapacityArgs([], 2);
    expect(a.targets).toEqual(['bridge', 'echo-delayed', 'echo']);
    expect(a.ladder).toContain(200);
    expect(a.pin).toBeUndefined();
    expect(a.cpuProfDir).toBeUndefined();
  });

  it('--pin puts the server on core 1 and the load on core 0 unless --pin-cpus says otherwise', () => {
    expect(parseCapacityArgs(['--pin'], 2).pin).toEqual({ server: 1, load: 0 });
    expect(parseCapacityArgs(['--pin', '--pin-cpus', '0,1'], 2).pin).toEqual({ server: 0, load: 1 });
    expect(() => parseCapacityArgs(['--pin-cpus', '0,1'], 2)).toThrow(/--pin-cpus sets the cores of --pin/);
    expect(() => parseCapacityArgs(['--pin'], 1)).toThrow(/--pin needs two cores, this machine has 1/);
    expect(() => parseCapacityArgs(['--pin', '--pin-cpus', '0,0'], 2)).toThrow(/two different cores/);
  });

  it('takes bridge-wN targets and names what it takes when a target, encoding or number is wrong', () => {
    expect(parseCapacityArgs(['--targets', 'bridge-w0,bridge-w1,echo'], 2).targets).toEqual([
      'bridge-w0',
      'bridge-w1',
      'echo',
    ]);
    expect(parseTarget('bridge-w0')).toEqual({ kind: 'bridge', workers: 0 });
    expect(parseTarget('bridge')).toEqual({ kind: 'bridge', workers: undefined });
    expect(parseTarget('echo-delayed')).toEqual({ kind: 'echo', delayed: true, v8Defaults: false });
    expect(parseTarget('echo-delayed-v8')).toEqual({ kind: 'echo', delayed: true, v8Defaults: true });
    expect(parseTarget('echo')).toEqual({ kind: 'echo', delayed: false, v8Defaults: false });
    expect(() => parseCapacityArgs(['--targets', 'bridge,nginx'], 2)).toThrow(
      /--targets takes bridge, bridge-wN .* got "nginx"/,
    );
    expect(() => parseCapacityArgs(['--encodings', 'json'], 2)).toThrow(
      /--encodings takes binary and base64/,
    );
    expect(() => parseCapacityArgs(['--ladder', '200,x'], 2)).toThrow(/--ladder takes whole numbers >= 1/);
    expect(() => parseCapacityArgs(['--seconds', '0'], 2)).toThrow(/--seconds takes whole numbers >= 1/);
    expect(() => parseCapacityArgs(['--stop-after', '1,2'], 2)).toThrow(
      /--stop-after takes one whole number/,
    );
    expect(parseCapacityArgs(['--ladder', '200,400', '--stop-after', '2'], 2)).toMatchObject({
      ladder: [200, 400],
      stopAfter: 2,
    });
  });
});
