// flashdraft serve, driven by the official openai client exactly as a user
// would: chat (streamed and not), completions, a stop string, n=2, usage,
// logprobs, penalties and logit_bias, an invalid request, a bad key, then
// tool calls (auto, required, a named function; streamed in pieces) and
// reasoning (scripted server: the tiny shipped model never writes them
// unforced). Both servers must exit 0 on SIGTERM.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import OpenAI from 'openai';

const KEY = 'e2e-key';
const src = process.env.FD_SOURCE_DIR;

// Starts a server process and resolves with {proc, url} once it listens and /health is 200.
async function startServer(bin, args) {
  const proc = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line from ${bin}:\n${log}`)), 60000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (code) => reject(new Error(`${bin} exited ${code}:\n${log}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${url}/health`).catch(() => null);
    if (r && r.status === 200) return { proc, url, log: () => log };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`/health never 200:\n${log}`);
}

// SIGTERM and the exit code.
function stopServer(server) {
  return new Promise((resolve) => {
    server.proc.on('exit', (code, signal) => resolve({ code, signal }));
    server.proc.kill('SIGTERM');
  });
}

let real, scripted, client, tools;
before(async () => {
  real = await startServer(process.env.FD_FLASHDRAFT_BIN, [
    'serve', '--model', `${src}/models/target`, '--device', 'cpu', '--port', '0', '--api-key', KEY,
    '--served-model-name', 'tiny', '--max-model-len', '1024',
    '--speculative-config', JSON.stringify({ method: 'dflash', model: `${src}/models/drafter-full` }),
  ]);
  scripted = await startServer(process.env.FD_SCRIPTED_SERVER_BIN, ['--model', `${src}/models/target`, '--api-key', KEY]);
  client = new OpenAI({ apiKey: KEY, baseURL: `${real.url}/v1` });
  tools = new OpenAI({ apiKey: KEY, baseURL: `${scripted.url}/v1` });
});

after(async () => {
  for (const s of [real, scripted]) {
    if (!s) continue;
    const { code, signal } = await stopServer(s);
    assert.equal(code, 0, `exit on SIGTERM: code ${code}, signal ${signal}\n${s.log()}`);
  }
});

const user = (content) => [{ role: 'user', content }];
const greedy = { temperature: 0, max_tokens: 24 };

function checkUsage(usage) {
  assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens > 0, JSON.stringify(usage));
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

test('models lists the served name', async () => {
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['tiny']);
});

test('chat, whole and streamed, say the same', async () => {
  const whole = await client.chat.completions.create({ model: 'tiny', messages: user('def add(a, b):'), ...greedy });
  assert.equal(whole.object, 'chat.completion');
  assert.match(whole.id, /^chatcmpl-/);
  const choice = whole.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(['stop', 'length'].includes(choice.finish_reason));
  checkUsage(whole.usage);

  const stream = await client.chat.completions.create({
    model: 'tiny', messages: user('def add(a, b):'), ...greedy, stream: true, stream_options: { include_usage: true },
  });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(text, choice.message.content);
  assert.equal(finish, choice.finish_reason);
  assert.deepEqual(usage, whole.usage);
});

test('completions, whole and streamed, say the same', async () => {
  const whole = await client.completions.create({ model: 'tiny', prompt: 'def fibonacci(n):\n', ...greedy });
  assert.equal(whole.object, 'text_completion');
  assert.equal(whole.choices[0].finish_reason, 'length');
  assert.equal(whole.usage.completion_tokens, greedy.max_tokens);
  checkUsage(whole.usage);
  const stream = await client.completions.create({ model: 'tiny', prompt: 'def fibonacci(n):\n', ...greedy, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);
});

test('a stop string ends the text before it', async () => {
  const prompt = 'def fibonacci(n):\n';
  const full = (await client.completions.create({ model: 'tiny', prompt, ...greedy })).choices[0].text;
  const at = full.search(/\S\S\S/g);
  assert.ok(at >= 0, `no stop candidate in ${JSON.stringify(full)}`);
  const stop = full.slice(Math.max(at, 4), Math.max(at, 4) + 3);
  const r = await client.completions.create({ model: 'tiny', prompt, ...greedy, stop: [stop] });
  assert.equal(r.choices[0].text, full.slice(0, full.indexOf(stop)));
  assert.equal(r.choices[0].finish_reason, 'stop');
});

test('n=2 gives two choices and counts both', async () => {
  const r = await client.completions.create({ model: 'tiny', prompt: 'import os\n', ...greedy, n: 2 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  assert.equal(r.choices[0].text, r.choices[1].text);  // greedy
  assert.equal(r.usage.completion_tokens, 2 * greedy.max_tokens);
});

test('logprobs: completions and chat, whole and streamed', async () => {
  const prompt = 'def fibonacci(n):\n';
  const whole = await client.completions.create({ model: 'tiny', prompt, ...greedy, logprobs: 2 });
  const lp = whole.choices[0].logprobs;
  assert.equal(lp.tokens.length, whole.usage.completion_tokens);
  assert.equal(lp.tokens.join(''), whole.choices[0].text);  // ASCII code, no stop: the tokens spell the text
  lp.token_logprobs.forEach((l, i) => {
    assert.ok(l <= 0, String(l));
    assert.equal(lp.top_logprobs[i][lp.tokens[i]], l);  // greedy: the chosen token is among the top
    assert.equal(Object.keys(lp.top_logprobs[i]).length, 2);
  });
  const stream = await client.completions.create({ model: 'tiny', prompt, ...greedy, logprobs: 2, stream: true });
  const tokens = [];
  for await (const chunk of stream) tokens.push(...(chunk.choices[0]?.logprobs?.tokens ?? []));
  assert.deepEqual(tokens, lp.tokens);

  const chat = await client.chat.completions.create({
    model: 'tiny', messages: user('def add(a, b):'), ...greedy, logprobs: true, top_logprobs: 3,
  });
  const content = chat.choices[0].logprobs.content;
  assert.equal(content.length, chat.usage.completion_tokens);
  for (const c of content) {
    assert.equal(c.top_logprobs.length, 3);
    assert.equal(c.top_logprobs[0].logprob, c.logprob);  // greedy
    assert.ok(Array.isArray(c.bytes));
  }
  const chatStream = await client.chat.completions.create({
    model: 'tiny', messages: user('def add(a, b):'), ...greedy, logprobs: true, top_logprobs: 3, stream: true,
  });
  const streamed = [];
  for await (const chunk of chatStream) streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamed.map((c) => c.token), content.map((c) => c.token));
});

test('penalties and logit_bias change greedy output', async () => {
  const prompt = 'def fibonacci(n):\n';
  const plain = (await client.completions.create({ model: 'tiny', prompt, ...greedy })).choices[0].text;
  const penalised = await client.completions.create({
    model: 'tiny', prompt, ...greedy, presence_penalty: 1.5, frequency_penalty: 1.0,
  });
  assert.notEqual(penalised.choices[0].text, plain);
  // The first token of the plain answer, banned by a bias of -100, is not chosen.
  const first = await client.completions.create({ model: 'tiny', prompt, ...greedy, max_tokens: 1, logprobs: 0 });
  const ids = await (await fetch(`${real.url}/tokenize`, {
    method: 'POST', headers: { Authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ prompt: first.choices[0].text }),
  })).json();
  assert.equal(ids.tokens.length, 1, JSON.stringify(ids));  // a token's text is that token
  const banned = ids.tokens[0];
  const biased = await client.completions.create({
    model: 'tiny', prompt, ...greedy, max_tokens: 1, logit_bias: { [banned]: -100 },
  });
  assert.notEqual(biased.choices[0].text, first.choices[0].text);
  await assert.rejects(
    client.completions.create({ model: 'tiny', prompt, ...greedy, echo: true }),
    (err) => err.status === 400 && err.param === 'echo');
});

test('an invalid request is a 400 naming the field', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'tiny', messages: user('hi'), temperature: -1 }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, String(err));
      assert.equal(err.status, 400);
      assert.equal(err.param, 'temperature');
      assert.match(err.message, /temperature/);
      return true;
    });
  await assert.rejects(client.completions.create({ model: 'nope', prompt: 'x' }), (err) => err.status === 404);
});

test('a bad key is a 401', async () => {
  const bad = new OpenAI({ apiKey: 'wrong', baseURL: `${real.url}/v1`, maxRetries: 0 });
  await assert.rejects(bad.models.list(), (err) => err instanceof OpenAI.AuthenticationError && err.status === 401);
});

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
};

test('tool call round trip', async () => {
  const messages = user('What is the weather in Paris?');
  const r = await tools.chat.completions.create({ model: 'scripted', messages, tools: [weatherTool] });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });

  // Streamed, the client's own accumulation gives the same call.
  const stream = tools.chat.completions.stream({ model: 'scripted', messages, tools: [weatherTool] });
  const streamed = await stream.finalChatCompletion();
  assert.equal(streamed.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(streamed.choices[0].message.tool_calls[0].function.arguments), { city: 'Paris' });

  messages.push(choice.message);
  messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ sky: 'sunny', celsius: 22 }) });
  const answer = await tools.chat.completions.create({ model: 'scripted', messages, tools: [weatherTool] });
  assert.equal(answer.choices[0].message.content, 'It is sunny in Paris, 22 degrees.');
  assert.equal(answer.choices[0].finish_reason, 'stop');
});

// Accumulates streamed tool-call deltas as a client does, checking their shape:
// a call's first delta has index, id, type and name with empty arguments; later
// ones only append arguments.
async function accumulateCalls(stream) {
  const calls = [];
  let finish = null, argumentDeltas = 0;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    finish = c.finish_reason ?? finish;
    for (const d of c.delta.tool_calls ?? []) {
      if (d.id !== undefined) {
        assert.equal(d.index, calls.length);
        assert.equal(d.type, 'function');
        assert.equal(d.function.arguments, '');
        calls.push({ id: d.id, name: d.function.name, arguments: '' });
      } else {
        assert.equal(d.function.name, undefined);
        calls[d.index].arguments += d.function.arguments;
        argumentDeltas++;
      }
    }
  }
  return { calls, finish, argumentDeltas };
}

test('tool_choice required and named, whole and streamed', async () => {
  const messages = user('What is the weather in Paris?');
  const named = { type: 'function', function: { name: 'get_weather' } };
  for (const tool_choice of ['required', named]) {
    const r = await tools.chat.completions.create({ model: 'scripted', messages, tools: [weatherTool], tool_choice });
    const choice = r.choices[0];
    // As OpenAI and vLLM: "tool_calls" for required, "stop" for a named function.
    assert.equal(choice.finish_reason, tool_choice === 'required' ? 'tool_calls' : 'stop');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    assert.match(choice.message.tool_calls[0].id, /^chatcmpl-tool-/);
    assert.equal(choice.message.tool_calls[0].function.name, 'get_weather');
    assert.deepEqual(JSON.parse(choice.message.tool_calls[0].function.arguments), { city: 'Paris' });

    const stream = await tools.chat.completions.create({
      model: 'scripted', messages, tools: [weatherTool], tool_choice, stream: true,
    });
    const streamed = await accumulateCalls(stream);
    assert.equal(streamed.calls.length, 1);
    assert.equal(streamed.calls[0].name, 'get_weather');
    assert.equal(streamed.calls[0].arguments, choice.message.tool_calls[0].function.arguments);
    assert.ok(streamed.argumentDeltas > 1, 'arguments arrive in pieces');
    assert.equal(streamed.finish, choice.finish_reason);
  }
  await assert.rejects(
    tools.chat.completions.create({
      model: 'scripted', messages, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } },
    }),
    (err) => err.status === 400 && err.param === 'tool_choice.function.name');
});

test('the tiny model, forced to call a named function, writes a call that parses', async () => {
  // Its arguments are whatever the 12M code model writes after the forced
  // start of the call: an object that parses, not a meaningful one. (With
  // the tool's description in the prompt it copies the template's
  // "<args-json-object>" placeholder instead, which is no call: content.)
  const bare = { type: 'function', function: { name: 'get_weather', parameters: weatherTool.function.parameters } };
  const request = {
    model: 'tiny', messages: user('What is the weather in Paris?'), tools: [bare],
    tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 0, max_tokens: 100,
  };
  const whole = await client.chat.completions.create(request);
  const call = whole.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments), 'object');
  assert.equal(whole.choices[0].finish_reason, 'stop');  // a named function's call ends the answer
  const streamed = await accumulateCalls(await client.chat.completions.create({ ...request, stream: true }));
  assert.deepEqual(streamed.calls.map((c) => [c.name, c.arguments]), [[call.function.name, call.function.arguments]]);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
});

test('reasoning content, whole and streamed', async () => {
  const r = await tools.chat.completions.create({ model: 'scripted', messages: user('hi') });
  const m = r.choices[0].message;
  assert.equal(m.reasoning_content, '\nThe user greets me; I greet back.\n');
  assert.equal(m.content, '\n\nHello! How can I help you today?');
  const stream = await tools.chat.completions.create({ model: 'scripted', messages: user('hi'), stream: true });
  let reasoning = '', content = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta ?? {};
    reasoning += d.reasoning_content ?? '';
    content += d.content ?? '';
  }
  assert.equal(reasoning, m.reasoning_content);
  assert.equal(content, m.content);
});
