// The executor's scheduling, references, containers, error handling, cancellation, pause/resume and redaction.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine, ResumeError, type RunEvent } from '../src/execution/index.ts';
import type { SandboxPool } from '../src/sandbox/pool.ts';
import { block, edge, fn, start, testEngine, workflow } from './support/workflow.ts';

let engine: Engine;
let sandbox: SandboxPool;
beforeAll(async () => {
  ({ engine, sandbox } = await testEngine());
});
afterAll(() => sandbox.close());

const cond = (name: string, conditions: { id: string; title: string; value: string }[]) => block('condition', name, { conditions });

describe('DAG scheduling', () => {
  it('runs a chain, passing outputs by reference, and returns the last output', async () => {
    const r = await engine.execute(
      workflow([start([{ name: 'n', type: 'number' }]), fn('Double', 'return <start.n> * 2'), fn('Add One', 'return <double.result> + 1')], [edge('start', 'double'), edge('double', 'addone')]),
      { input: { n: 20 } },
    );
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ result: 41, stdout: '' });
    expect(r.blockOutputs.double).toEqual({ result: 40, stdout: '' });
    expect(r.traceSpans.map((s) => s.name)).toEqual(['Start', 'Double', 'Add One']);
    expect(r.error).toBeNull();
  });

  it('runs independent branches concurrently and joins them', async () => {
    const slow = (name: string) => block('wait', name, { timeValue: '0.15', timeUnit: 'seconds' });
    const wf = workflow(
      [start(), slow('A'), slow('B'), fn('Join', 'return [<a.waitDuration>, <b.waitDuration>]')],
      [edge('start', 'a'), edge('start', 'b'), edge('a', 'join'), edge('b', 'join')],
    );
    const r = await engine.execute(wf);
    expect(r.status).toBe('completed');
    // Concurrent: each branch started before the other ended (one after the other, they could not overlap).
    const [a, b] = ['A', 'B'].map((n) => r.traceSpans.find((x) => x.name === n)!);
    expect(a!.relativeStartMs).toBeLessThan(b!.relativeStartMs + b!.durationMs);
    expect(b!.relativeStartMs).toBeLessThan(a!.relativeStartMs + a!.durationMs);
    expect((r.output as { result: unknown }).result).toEqual([150, 150]);
  });

  it('follows the chosen condition branch and reports the other as skipped, including what lies behind it', async () => {
    const wf = workflow(
      [
        start([{ name: 'x', type: 'number' }]),
        cond('Check', [
          { id: 'big', title: 'if', value: '<start.x> > 10' },
          { id: 'mid', title: 'else if', value: '<start.x> > 5' },
          { id: 'small', title: 'else', value: '' },
        ]),
        fn('Big', 'return "big"'),
        fn('Mid', 'return "mid"'),
        fn('Small', 'return "small"'),
        fn('After Small', 'return 1'),
      ],
      [edge('start', 'check'), edge('check', 'big', 'condition-big'), edge('check', 'mid', 'condition-mid'), edge('check', 'small', 'condition-small'), edge('small', 'aftersmall')],
    );
    const events: RunEvent[] = [];
    const r = await engine.execute(wf, { input: { x: 7 }, onEvent: (e) => events.push(e) });
    expect(r.output).toEqual({ result: 'mid', stdout: '' });
    expect(r.blockOutputs.check).toMatchObject({ conditionResult: true, selectedConditionId: 'mid', selectedPath: { blockId: 'mid' } });
    expect(r.skipped.map((s) => [s.blockId, s.reason]).sort()).toEqual([
      ['aftersmall', 'untaken-path'],
      ['big', 'untaken-path'],
      ['small', 'untaken-path'],
    ]);
    expect(events.filter((e) => e.type === 'block_skipped').length).toBe(3);
    const low = await engine.execute(wf, { input: { x: 1 } });
    expect(low.output).toEqual({ result: 1, stdout: '' });
    expect(low.blockOutputs.check).toMatchObject({ conditionResult: false, selectedConditionId: 'small' });
  });

  it('a condition that throws fails the block, naming the condition', async () => {
    const r = await engine.execute(workflow([start(), cond('Check', [{ id: 'a', title: 'if', value: 'undefinedThing.x' }])], [edge('start', 'check')]));
    expect(r.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'check', blockType: 'condition' });
    expect(r.error!.message).toMatch(/Condition "if" failed: .*undefinedThing/);
  });

  it('a router sends the run down the first matching rule, or the fallback', async () => {
    const routes = [
      { id: 'vip', title: 'VIP', value: '<start.tier> === "gold"' },
      { id: 'other', title: 'default', value: '' },
    ];
    const wf = workflow(
      [start(), block('router', 'Route', { prompt: 'tier', routes }), fn('Vip', 'return "vip"'), fn('Other', 'return "other"')],
      [edge('start', 'route'), edge('route', 'vip', 'router-vip'), edge('route', 'other', 'router-other')],
    );
    const gold = await engine.execute(wf, { input: { tier: 'gold' } });
    expect(gold.output).toEqual({ result: 'vip', stdout: '' });
    expect(gold.skipped.map((s) => s.blockId)).toEqual(['other']);
    const tin = await engine.execute(wf, { input: { tier: 'tin' } });
    expect(tin.blockOutputs.route).toMatchObject({ selectedRoute: 'other' });
    const noFallback = await engine.execute(
      workflow([start(), block('router', 'Route', { routes: [routes[0]] })], [edge('start', 'route')]),
      { input: { tier: 'tin' } },
    );
    expect(noFallback.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'route', message: expect.stringMatching(/No route matched/) });
  });

  it('skips disabled blocks and blocks only they lead to; unconnected blocks are unreachable', async () => {
    const r = await engine.execute(
      workflow([start(), fn('Off', 'return 1', { enabled: false }), fn('Behind', 'return 2'), fn('Island', 'return 3'), fn('On', 'return 4')], [edge('start', 'off'), edge('off', 'behind'), edge('start', 'on')]),
    );
    expect(r.status).toBe('completed');
    expect(Object.fromEntries(r.skipped.map((s) => [s.blockId, s.reason]))).toEqual({ off: 'disabled', behind: 'untaken-path', island: 'unreachable' });
    expect(r.blockOutputs.on).toEqual({ result: 4, stdout: '' });
  });

  it('fails with EXECUTION_FAILED when there is no start block or a block type is unknown', async () => {
    const none = await engine.execute(workflow([fn('Lonely', 'return 1')], []));
    expect(none.error).toMatchObject({ code: 'EXECUTION_FAILED', message: expect.stringMatching(/no enabled start block/) });
    const unknown = await engine.execute(workflow([start(), block('teleport', 'Beam')], [edge('start', 'beam')]));
    expect(unknown.error).toMatchObject({ code: 'EXECUTION_FAILED', blockId: 'beam', blockType: 'teleport' });
  });
});

describe('references', () => {
  it('resolves block outputs, the start input, variables, paths and array indexes', async () => {
    const r = await engine.execute(
      workflow(
        [start(), fn('Make', 'return { items: [{ name: "a" }, { name: "b" }], label: "L" }'), fn('Read', 'return [<make.result.items[1].name>, <variable.greeting>, <start.input.who>, <start.who>, "<make.result.label>-x"]')],
        [edge('start', 'make'), edge('make', 'read')],
        [{ name: 'greeting', type: 'string', value: 'hi' }],
      ),
      { input: { who: 'Ada' } },
    );
    expect(r.error).toBeNull();
    expect((r.output as { result: unknown }).result).toEqual(['b', 'hi', 'Ada', 'Ada', 'L-x']);
  });

  it('an unresolvable reference fails the block with a message naming it', async () => {
    const missingPath = await engine.execute(workflow([start(), fn('Make', 'return {a: 1}'), fn('Read', 'return <make.result.nope>')], [edge('start', 'make'), edge('make', 'read')]));
    expect(missingPath.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'read', blockName: 'Read', blockType: 'function' });
    expect(missingPath.error!.message).toContain('<make.result.nope>');
    const noBlock = await engine.execute(workflow([start(), block('response', 'Out', { data: '{"x": "<ghost.value>"}' })], [edge('start', 'out')]));
    expect(noBlock.error!.message).toMatch(/<ghost\.value>.*no block named "ghost"/);
    const noVariable = await engine.execute(workflow([start(), block('response', 'Out', { data: '<variable.nope>' })], [edge('start', 'out')]));
    expect(noVariable.error!.message).toMatch(/no workflow variable named "nope"/);
    const loopOutside = await engine.execute(workflow([start(), fn('F', 'return <loop.index>')], [edge('start', 'f')]));
    expect(loopOutside.error!.message).toMatch(/<loop\.index>.*outside a loop/);
  });

  it('a reference to a block that does not exist fails in code too, naming the reference and the block, never as a syntax error', async () => {
    const inCode = await engine.execute(workflow([start(), fn('Double', 'return <calc.result> * 2')], [edge('start', 'double')]));
    expect(inCode.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'double', blockName: 'Double', blockType: 'function' });
    expect(inCode.error!.message).toBe('Block "Double" references <calc.result>, but no block named "calc" exists');
    const inCondition = await engine.execute(
      workflow([start(), cond('Check', [{ id: 'c1', title: 'if', value: '<calc.result> > 1' }, { id: 'c2', title: 'else', value: '' }])], [edge('start', 'check')]),
    );
    expect(inCondition.error!.message).toBe('Block "Check" references <calc.result>, but no block named "calc" exists');
    const wrongPath = await engine.execute(workflow([start(), fn('Make', 'return 1'), fn('Read', 'return <make.reslt>')], [edge('start', 'make'), edge('make', 'read')]));
    expect(wrongPath.error!.message).toBe('Block "Read" references <make.reslt>, but the output of "Make" has no "reslt"');
    // Text that compiles as it is stays code: a comparison, and a regular expression that looks like a reference.
    const fine = await engine.execute(workflow([start(), fn('F', 'const a = 1, b = { c: 2 }; return [a<b.c>0, "x<br.a>y".replace(/<br.*?>/g, "-")]')], [edge('start', 'f')]));
    expect(fine.error).toBeNull();
    expect((fine.output as { result: unknown }).result).toEqual([true, 'x-y']);
  });

  it('leaves comparisons in code alone and splices text into string literals safely', async () => {
    const r = await engine.execute(
      workflow([start(), fn('F', 'const a = 1, b = { c: 2 }; const s = \'<start.q>\'; return [a<b.c>0, s, `t:<start.q>`]')], [edge('start', 'f')]),
      { input: { q: "it's \"quoted\" `x` ${y}" } },
    );
    expect(r.error).toBeNull();
    expect((r.output as { result: unknown }).result).toEqual([true, "it's \"quoted\" `x` ${y}", "t:it's \"quoted\" `x` ${y}"]);
  });
});

describe('loops and parallels', () => {
  const loop = (name: string, data: Record<string, unknown>) => block('loop', name, {}, { data: data as never });
  const par = (name: string, data: Record<string, unknown>) => block('parallel', name, {}, { data: data as never });
  const inside = (parentId: string, name: string, code: string) => fn(name, code, { data: { parentId } });

  it('for: runs the body count times with <loop.index>, collects results, exposes the last iteration after', async () => {
    const r = await engine.execute(
      workflow([start(), loop('Repeat', { loopType: 'for', count: 4 }), inside('repeat', 'Body', 'return <loop.index> * 10'), fn('After', 'return [<repeat.results>, <body.result>]')], [
        edge('start', 'repeat'),
        edge('repeat', 'body', 'loop-start-source'),
        edge('repeat', 'after', 'loop-end-source'),
      ]),
    );
    expect(r.error).toBeNull();
    expect((r.output as { result: unknown }).result).toEqual([[{ result: 0, stdout: '' }, { result: 10, stdout: '' }, { result: 20, stdout: '' }, { result: 30, stdout: '' }], 30]);
    const span = r.traceSpans.find((s) => s.name === 'Repeat')!;
    expect(span.children!.map((c) => [c.type, c.name, c.children!.length])).toEqual([
      ['loop-iteration', 'Iteration 1', 1],
      ['loop-iteration', 'Iteration 2', 1],
      ['loop-iteration', 'Iteration 3', 1],
      ['loop-iteration', 'Iteration 4', 1],
    ]);
    expect(r.blockExecutions).toBe(7);
  });

  it('forEach over a referenced collection with <loop.currentItem>', async () => {
    const r = await engine.execute(
      workflow([start(), loop('Each', { loopType: 'forEach', collection: '<start.items>' }), inside('each', 'Upper', 'return <loop.currentItem>.toUpperCase() + <loop.index>')], [edge('start', 'each'), edge('each', 'upper', 'loop-start-source')]),
      { input: { items: ['a', 'b', 'c'] } },
    );
    expect((r.output as { results: { result: string }[] }).results.map((x) => x.result)).toEqual(['A0', 'B1', 'C2']);
  });

  it('while and doWhile evaluate their conditions; a loop past the iteration cap fails', async () => {
    const counter = [{ name: 'n', type: 'number' as const, value: 0 }];
    const bump = (parent: string) => block('variables', 'Bump', { variables: [{ variableName: 'n', value: '<inc.result>' }] }, { data: { parentId: parent } });
    const body = (parent: string) => [inside(parent, 'Inc', 'return <variable.n> + 1'), bump(parent)];
    const build = (data: Record<string, unknown>) =>
      workflow([start(), loop('L', data), ...body('l')], [edge('start', 'l'), edge('l', 'inc', 'loop-start-source'), edge('inc', 'bump')], counter);
    const w = await engine.execute(build({ loopType: 'while', whileCondition: '<variable.n> < 3' }));
    expect(w.error).toBeNull();
    expect((w.output as { results: unknown[] }).results).toHaveLength(3);
    const never = await engine.execute(build({ loopType: 'while', whileCondition: 'false' }));
    expect((never.output as { results: unknown[] }).results).toHaveLength(0);
    const once = await engine.execute(build({ loopType: 'doWhile', doWhileCondition: 'false' }));
    expect((once.output as { results: unknown[] }).results).toHaveLength(1);
    const forever = await engine.execute(build({ loopType: 'while', whileCondition: 'true' }));
    expect(forever.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'l', message: expect.stringMatching(/limit of 50 iterations/) });
    const tooMany = await engine.execute(build({ loopType: 'for', count: 51 }));
    expect(tooMany.error!.message).toMatch(/51 iterations; the limit is 50/);
  });

  it('parallel over a collection runs branches concurrently up to the cap, results in order', async () => {
    const wf = workflow(
      [start(), par('Fan', { parallelType: 'collection', collection: '[30, 10, 20, 5, 1, 2]' }), block('wait', 'Nap', { timeValue: '0.1', timeUnit: 'seconds' }, { data: { parentId: 'fan' } }), inside('fan', 'Echo', 'return <parallel.currentItem> + <parallel.index>')],
      [edge('start', 'fan'), edge('fan', 'nap', 'parallel-start-source'), edge('nap', 'echo')],
    );
    const t = Date.now();
    const r = await engine.execute(wf);
    const took = Date.now() - t;
    expect(r.error).toBeNull();
    expect((r.output as { results: { result: number }[] }).results.map((x) => x.result)).toEqual([30, 11, 22, 8, 5, 7]);
    // 6 branches, 4 at a time, 100 ms each: two waves. At most 4 branches overlap, and 4 do.
    expect(took).toBeGreaterThanOrEqual(195);
    const branches = r.traceSpans.find((s) => s.name === 'Fan')!.children!;
    expect(branches.map((c) => c.name)).toEqual(['Branch 1', 'Branch 2', 'Branch 3', 'Branch 4', 'Branch 5', 'Branch 6']);
    const overlapping = (at: number) => branches.filter((c) => c.relativeStartMs <= at && at < c.relativeStartMs + c.durationMs).length;
    expect(Math.max(...branches.map((c) => overlapping(c.relativeStartMs)))).toBe(4);
  });

  it('parallel by count; a failing branch fails the container with the inner block named', async () => {
    const ok = await engine.execute(workflow([start(), par('P', { parallelType: 'count', count: 3 }), inside('p', 'I', 'return <parallel.index>')], [edge('start', 'p'), edge('p', 'i', 'parallel-start-source')]));
    expect((ok.output as { results: { result: number }[] }).results.map((x) => x.result)).toEqual([0, 1, 2]);
    const bad = await engine.execute(
      workflow([start(), par('P', { parallelType: 'count', count: 3 }), inside('p', 'I', 'if (<parallel.index> === 1) throw new Error("branch one broke"); return 1')], [edge('start', 'p'), edge('p', 'i', 'parallel-start-source')]),
    );
    expect(bad.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'i', message: expect.stringContaining('branch one broke') });
  });
});

describe('errors, retries and error paths', () => {
  it('a failing block without an error path fails the run with its id, name and type', async () => {
    const r = await engine.execute(workflow([start(), fn('Boom', 'throw new Error("kaput")'), fn('Never', 'return 1')], [edge('start', 'boom'), edge('boom', 'never')]));
    expect(r.status).toBe('failed');
    expect(r.error).toEqual({ code: 'BLOCK_EXECUTION_FAILED', message: 'The function failed: kaput', blockId: 'boom', blockName: 'Boom', blockType: 'function' });
    expect(r.traceSpans.find((s) => s.name === 'Boom')).toMatchObject({ status: 'error', errorType: 'BLOCK_EXECUTION_FAILED' });
  });

  it('a failing block with an error path continues there and the normal path is skipped', async () => {
    const r = await engine.execute(
      workflow([start(), fn('Boom', 'throw new Error("kaput")'), fn('Happy', 'return "happy"'), fn('Rescue', 'return "rescued: " + <boom.error>')], [edge('start', 'boom'), edge('boom', 'happy'), edge('boom', 'rescue', 'error')]),
    );
    expect(r.status).toBe('completed');
    expect(r.output).toEqual({ result: 'rescued: The function failed: kaput', stdout: '' });
    expect(r.skipped.map((s) => s.blockId)).toEqual(['happy']);
    expect(r.traceSpans.find((s) => s.name === 'Boom')).toMatchObject({ status: 'error', errorHandled: true });
    const ok = await engine.execute(workflow([start(), fn('Fine', 'return 1'), fn('Rescue', 'return 2')], [edge('start', 'fine'), edge('fine', 'rescue', 'error')]));
    expect(ok.skipped.map((s) => s.blockId)).toEqual(['rescue']);
  });

  it('retries a failing block up to maxTries, waiting between tries', async () => {
    // The variable counts attempts across tries: fail twice, then succeed.
    const attempts = [{ name: 'tries', type: 'number' as const, value: 0 }];
    const flaky = fn('Flaky', 'return 1', { retry: { enabled: true, maxTries: 3, waitBetweenTriesMs: 20 } });
    let calls = 0;
    const handlers = { ...engine.handlers, function: async (ctx: Parameters<Engine['handlers'][string]>[0]) => {
      if (ctx.block.id === 'flaky' && ++calls < 3) throw new Error(`attempt ${calls} failed`);
      return engine.handlers.function!(ctx);
    } };
    const retrying = new Engine({ ...engine.options, handlers });
    const events: RunEvent[] = [];
    const t = Date.now();
    const r = await retrying.execute(workflow([start(), flaky], [edge('start', 'flaky')], attempts), { onEvent: (e) => events.push(e) });
    expect(r.status).toBe('completed');
    expect(calls).toBe(3);
    expect(Date.now() - t).toBeGreaterThanOrEqual(40);
    expect(events.filter((e) => e.type === 'block_retry').map((e) => (e as { attempt: number }).attempt)).toEqual([1, 2]);
    calls = -10;
    const exhausted = await retrying.execute(workflow([start(), flaky], [edge('start', 'flaky')]));
    expect(exhausted.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'flaky', message: 'attempt -7 failed' });
  });

  it('INVALID_INPUT when the input does not match the start block fields', async () => {
    const wf = workflow([start([{ name: 'age', type: 'number', required: true }, { name: 'tags', type: 'array' }])], []);
    expect((await engine.execute(wf, { input: { age: 'old' } })).error).toMatchObject({ code: 'INVALID_INPUT', blockId: 'start', message: 'Invalid input: "age" must be a number, got string' });
    expect((await engine.execute(wf, { input: {} })).error).toMatchObject({ code: 'INVALID_INPUT', message: 'Invalid input: "age" is required' });
    expect((await engine.execute(wf, { input: { age: 3, tags: 'x' } })).error!.message).toMatch(/"tags" must be an array/);
    expect((await engine.execute(wf, { input: [1] })).error!.message).toMatch(/must be a JSON object/);
    expect((await engine.execute(wf, { input: { age: 3, tags: [] , extra: true } })).status).toBe('completed');
  });

  it('TIMEOUT when the run outlives its limit; per-function time limit too', async () => {
    const slow = await engine.execute(workflow([start(), block('wait', 'Long', { timeValue: '5', timeUnit: 'seconds' })], [edge('start', 'long')]), { timeoutMs: 100 });
    expect(slow.status).toBe('failed');
    expect(slow.error).toMatchObject({ code: 'TIMEOUT', blockId: 'long' });
    const spin = await engine.execute(workflow([start(), block('function', 'Spin', { code: 'while (true) {}', timeout: 100 })], [edge('start', 'spin')]));
    expect(spin.error).toMatchObject({ code: 'TIMEOUT', blockId: 'spin' });
  });

  it('CANCELLED when the caller aborts, stopping a wait at once', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const t = Date.now();
    const r = await engine.execute(workflow([start(), block('wait', 'Long', { timeValue: '10', timeUnit: 'minutes' }), fn('After', 'return 1')], [edge('start', 'long'), edge('long', 'after')]), { signal: controller.signal });
    // Far less than the ten-minute wait, however busy the machine.
    expect(Date.now() - t).toBeLessThan(60_000);
    expect(r.status).toBe('cancelled');
    expect(r.error).toMatchObject({ code: 'CANCELLED', blockId: 'long' });
    expect(r.blockOutputs.after).toBeUndefined();
  });

  it('cancelling a running function kills its sandbox process and the pool recovers', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const r = await engine.execute(workflow([start(), fn('Spin', 'while (true) {}')], [edge('start', 'spin')]), { signal: controller.signal });
    expect(r.error).toMatchObject({ code: 'CANCELLED', blockId: 'spin' });
    const after = await engine.execute(workflow([start(), fn('F', 'return 5')], [edge('start', 'f')]));
    expect(after.output).toEqual({ result: 5, stdout: '' });
  });

  it('USAGE_LIMIT_EXCEEDED from the usage check or the block-execution limit', async () => {
    const wf = workflow([start(), fn('A', 'return 1'), fn('B', 'return 2')], [edge('start', 'a'), edge('a', 'b')]);
    const over = await engine.execute(wf, { checkUsage: () => 'Monthly usage limit reached' });
    expect(over.error).toEqual({ code: 'USAGE_LIMIT_EXCEEDED', message: 'Monthly usage limit reached' });
    expect(over.traceSpans).toEqual([]);
    const capped = await engine.execute(wf, { maxBlockExecutions: 2 });
    expect(capped.error).toMatchObject({ code: 'USAGE_LIMIT_EXCEEDED', blockId: 'b' });
  });
});

describe('pause and resume', () => {
  const approval = () =>
    workflow(
      [start(), fn('Draft', 'return "draft for " + <start.who>'), block('human_in_the_loop', 'Approve', { message: 'Check <draft.result>', inputFormat: [{ name: 'note', type: 'string', required: true }] }), block('response', 'Reply', { data: '{"draft": <draft.result>, "note": <approve.note>, "ok": <approve.approved>}' })],
      [edge('start', 'draft'), edge('draft', 'approve'), edge('approve', 'reply')],
    );

  it('pauses at a human-in-the-loop block and resumes from a JSON round-tripped checkpoint', async () => {
    const events: RunEvent[] = [];
    const paused = await engine.execute(approval(), { input: { who: 'Ada' }, onEvent: (e) => events.push(e) });
    expect(paused.status).toBe('paused');
    expect(paused.pause).toEqual([{ blockId: 'approve', blockName: 'Approve', pausedAt: expect.any(String), message: 'Check draft for Ada', inputFormat: [{ name: 'note', type: 'string', required: true }] }]);
    expect(paused.blockOutputs.reply).toBeUndefined();
    expect(events.map((e) => e.type)).toContain('run_paused');
    const checkpoint = JSON.parse(JSON.stringify(paused.checkpoint));

    await expect(engine.resume(approval(), checkpoint, { input: {} })).rejects.toBeInstanceOf(ResumeError);
    await expect(engine.resume(approval(), checkpoint, { blockId: 'draft', input: { note: 'x' } })).rejects.toThrow(/not paused/);

    const done = await engine.resume(approval(), checkpoint, { input: { note: 'looks good' } });
    expect(done.status).toBe('completed');
    expect(done.runId).toBe(paused.runId);
    expect(done.output).toEqual({ draft: 'draft for Ada', note: 'looks good', ok: true });
    expect(done.traceSpans.map((s) => s.name)).toEqual(['Start', 'Draft', 'Approve', 'Reply']);
  });

  it('keeps secrets used before the pause redacted after resuming', async () => {
    const wf = workflow(
      [start(), fn('Key', 'return "{{TOKEN}}"'), block('human_in_the_loop', 'Ask', { message: 'ok?' }), block('response', 'Out', { data: '{"k": <key.result>}' })],
      [edge('start', 'key'), edge('key', 'ask'), edge('ask', 'out')],
    );
    const secrets = { TOKEN: 'tok-hidden-999' };
    const paused = await engine.execute(wf, { secrets });
    expect(paused.checkpoint!.secretNames).toEqual(['TOKEN']);
    expect(JSON.stringify(paused.checkpoint!.traceSpans)).not.toContain('tok-hidden-999');
    const done = await engine.resume(wf, JSON.parse(JSON.stringify(paused.checkpoint)), {}, { secrets });
    expect(done.output).toEqual({ k: '[REDACTED]' });
    expect(JSON.stringify(done)).not.toContain('tok-hidden-999');
  });
});

describe('secrets', () => {
  it('substitutes {{NAME}} and redacts the value from output, spans, events and errors', async () => {
    const events: RunEvent[] = [];
    const r = await engine.execute(
      workflow([start(), fn('Use', 'const k = "{{API_TOKEN}}"; console.log("key", k); return { k, len: k.length }'), fn('Fail', 'throw new Error("bad key " + <use.result.k>)')], [edge('start', 'use'), edge('use', 'fail')]),
      { secrets: { API_TOKEN: 'tok-s3cr3t-value' }, onEvent: (e) => events.push(e) },
    );
    expect(r.blockOutputs.use).toEqual({ result: { k: '[REDACTED]', len: 16 }, stdout: 'key [REDACTED]' });
    expect(r.error!.message).toBe('The function failed: bad key [REDACTED]');
    const everything = JSON.stringify({ r, events });
    expect(everything).not.toContain('tok-s3cr3t-value');
    expect(everything).toContain('[REDACTED]');
  });

  it('an unknown secret fails the block naming it', async () => {
    const r = await engine.execute(workflow([start(), block('response', 'Out', { data: '{"a": "{{MISSING}}"}' })], [edge('start', 'out')]), { secrets: async () => undefined });
    expect(r.error).toMatchObject({ code: 'BLOCK_EXECUTION_FAILED', blockId: 'out', message: expect.stringContaining('{{MISSING}}') });
  });
});

describe('events', () => {
  it('reports run start, each block start/completion and the final result in order', async () => {
    const events: RunEvent[] = [];
    const r = await engine.execute(workflow([start(), fn('A', 'return 1')], [edge('start', 'a')]), { runId: 'run-fixed', onEvent: (e) => events.push(e) });
    expect(r.runId).toBe('run-fixed');
    expect(events.map((e) => `${e.type}${'blockId' in e ? ':' + e.blockId : ''}`)).toEqual([
      'run_started',
      'block_started:start',
      'block_completed:start',
      'block_started:a',
      'block_completed:a',
      'run_finished',
    ]);
    expect(events.every((e) => e.runId === 'run-fixed')).toBe(true);
  });
});
