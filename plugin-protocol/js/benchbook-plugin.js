'use strict';
/**
 * benchbook plugin SDK for Node (no npm dependencies). Require it FIRST in a plugin script:
 *
 *   const bb = require('./benchbook-plugin');     // isolates stdout before any other code runs
 *   bb.serve({ id, name, description, category, capabilities, inputs, outputs, config_schema,
 *              run(inputs, config, ctx) { ...; return { output_name: value }; } });
 *
 * With `batch: true` the plugin takes many runs of a step at once: run(items, config, ctx) gets an
 * array of input objects and returns an array in the same order, each element an object of
 * outputs or an Error (that item fails alone; a PluginError keeps its kind). README.md, "Batches".
 *
 * `node plugin.js` is tier 1 (loops over frames until end of input); `node plugin.js describe` and
 * `node plugin.js run` are tier 2 (read exactly one frame, answer, exit 0). See README.md here.
 *
 * Stdout isolation (README.md, "Stdout isolation"): at require time this module
 *   1. on systems with /dev/fd (Linux, macOS) and a pipe or terminal as standard output,
 *      opens /dev/fd/1 as a private descriptor (close-on-exec), closes fd 1 and opens /dev/null
 *      in its place: fd 1 is the null device, so child processes, native code and anything else
 *      writing to fd 1 cannot reach the wire. Standard input gets the same treatment (frames are
 *      read from a private descriptor, fd 0 reads the null device). `isolation` is then 'fd';
 *   2. otherwise (a regular file or a socket as stdout, Windows) keeps writing frames to fd 1:
 *      `isolation` is 'js';
 *   3. in both cases replaces process.stdout, process.stdin and console.log/info/debug/warn/error:
 *      stray JavaScript output becomes `log` frames (stream `stdout`, or `stderr` for
 *      console.warn/error) during a turn and goes to standard error between turns.
 */
const fs = require('fs');
const os = require('os');
const path = require('path');
const util = require('util');
const crypto = require('crypto');
const { Writable, Readable } = require('stream');

const MAX_FRAME_BYTES = 16 * 1024 * 1024;
const BINARY_INLINE_THRESHOLD = 1000000;
const TABLE_INLINE_ROWS = 5000;

// ---------------------------------------------------------------- descriptors and isolation

/** Reopen fd `fd` privately and put the null device in its place; the private fd, or null. */
function divertFd(fd, flags) {
  let priv;
  try {
    // only a pipe or a terminal: reopening a regular file would not share the parent's file
    // offset (writes would overwrite each other), and a socket cannot be reopened (ENXIO)
    const st = fs.fstatSync(fd);
    if (!st.isFIFO() && !st.isCharacterDevice()) return null;
    priv = fs.openSync(`/dev/fd/${fd}`, flags);
  } catch (err) {
    return null; // no /dev/fd (Windows): keep the real descriptor
  }
  fs.closeSync(fd);
  let nul = fs.openSync('/dev/null', fd === 0 ? 'r' : 'w');
  while (nul < fd) nul = fs.openSync('/dev/null', fd === 0 ? 'r' : 'w'); // lower fds were closed: fill them
  return priv;
}

const OUT_FD = divertFd(1, fs.constants.O_WRONLY | fs.constants.O_APPEND);
const IN_FD = OUT_FD === null ? null : divertFd(0, fs.constants.O_RDONLY);
const WIRE_OUT = OUT_FD === null ? 1 : OUT_FD;
const WIRE_IN = IN_FD === null ? 0 : IN_FD;
const isolation = OUT_FD === null ? 'js' : 'fd';

const pause = new Int32Array(new SharedArrayBuffer(4));
function sleep(ms) { Atomics.wait(pause, 0, 0, ms); }

function writeAll(fd, buf) {
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      if (err.code === 'EAGAIN') { sleep(1); continue; }
      if (err.code === 'EPIPE') process.exit(1); // the host is gone
      throw err;
    }
  }
}

function toStderr(text) {
  try { writeAll(2, Buffer.from(text, 'utf8')); } catch (err) { /* nowhere left to report */ }
}

// ---------------------------------------------------------------- validation and errors

let validator = null;
function frameValidator() {
  if (validator === null) validator = require('./validate').loadValidator();
  return validator;
}

/** An error with a protocol `kind`; thrown by ctx.* when the host answers an rpc_call with an
 * error frame (kind `capability_denied`, ...), and by plugin code to fail a run with its own kind. */
class PluginError extends Error {
  constructor(kind, message, { retryable = false, callId = null } = {}) {
    super(message);
    this.name = 'PluginError';
    this.kind = kind;
    this.retryable = retryable;
    this.callId = callId;
  }
}

function errorFrame(kind, message, retryable = false, callId = null) {
  return { type: 'error', call_id: callId, error: { kind, message: String(message), retryable: Boolean(retryable) } };
}

// ---------------------------------------------------------------- frames out

let inTurn = false;
const partial = { stdout: '', stderr: '' };

/** Write one frame; throws PluginError (protocol_error, frame_too_large) instead of sending a bad one. */
function sendFrame(frame) {
  let line;
  try {
    line = JSON.stringify(frame);
  } catch (err) {
    throw new PluginError('protocol_error', `the frame cannot be written as JSON: ${err.message}`);
  }
  const problems = frameValidator().checkFrame(JSON.parse(line), 'plugin_to_host');
  if (problems.length) throw new PluginError('protocol_error', `the plugin built a frame that breaks the protocol: ${problems.slice(0, 3).join('; ')}`);
  const buf = Buffer.from(`${line}\n`, 'utf8');
  if (buf.length > MAX_FRAME_BYTES) {
    throw new PluginError('frame_too_large', `a ${frame.type} frame of ${buf.length} bytes is over ${MAX_FRAME_BYTES}`);
  }
  writeAll(WIRE_OUT, buf);
}

/** Stray output: whole lines become log frames during a turn, standard error otherwise. */
function stray(stream, text) {
  partial[stream] += text;
  let nl;
  while ((nl = partial[stream].indexOf('\n')) !== -1) {
    const line = partial[stream].slice(0, nl);
    partial[stream] = partial[stream].slice(nl + 1);
    emitStray(stream, line);
  }
}

function emitStray(stream, line) {
  if (!inTurn) { toStderr(`${line}\n`); return; }
  try {
    sendFrame({ type: 'log', message: line, stream });
  } catch (err) {
    toStderr(`${line}\n`);
  }
}

function flushStray() {
  for (const stream of ['stdout', 'stderr']) {
    if (partial[stream]) {
      const line = partial[stream];
      partial[stream] = '';
      emitStray(stream, line);
    }
  }
}

function chunkText(chunk, encoding) {
  if (typeof chunk === 'string') return chunk;
  return Buffer.from(chunk).toString(typeof encoding === 'string' && encoding !== 'buffer' ? encoding : 'utf8');
}

function strayStream(stream, fd) {
  const w = new Writable({ write(chunk, encoding, cb) { stray(stream, chunkText(chunk, encoding)); cb(); } });
  w.write = (chunk, encoding, cb) => {
    stray(stream, chunkText(chunk, encoding));
    const done = typeof encoding === 'function' ? encoding : cb;
    if (typeof done === 'function') process.nextTick(done);
    return true;
  };
  w.fd = fd;
  w.isTTY = false;
  return w;
}

const fakeStdout = strayStream('stdout', 1);
let fakeStdin = null;
Object.defineProperty(process, 'stdout', { configurable: true, enumerable: true, get: () => fakeStdout });
Object.defineProperty(process, 'stdin', {
  configurable: true,
  enumerable: true,
  get: () => {
    if (fakeStdin === null) fakeStdin = new Readable({ read() { this.push(null); } });
    return fakeStdin;
  },
});
for (const [method, stream] of [['log', 'stdout'], ['info', 'stdout'], ['debug', 'stdout'], ['warn', 'stderr'], ['error', 'stderr']]) {
  console[method] = (...args) => stray(stream, `${util.format(...args)}\n`);
}

// ---------------------------------------------------------------- frames in

let unread = Buffer.alloc(0); // read from the host, not yet consumed (may hold newlines)
let inputEnded = false;
const readBuf = Buffer.alloc(1 << 20);

function readChunk() {
  for (;;) {
    try {
      const n = fs.readSync(WIRE_IN, readBuf, 0, readBuf.length, null);
      return n === 0 ? null : Buffer.from(readBuf.subarray(0, n));
    } catch (err) {
      if (err.code === 'EAGAIN') { sleep(2); continue; }
      if (err.code === 'EOF') return null;
      throw err;
    }
  }
}

function tooLarge() {
  return new PluginError('frame_too_large', `the host sent a line over ${MAX_FRAME_BYTES} bytes`);
}

/** The next line from the host without its newline, or null at end of input. A line over
 * MAX_FRAME_BYTES (newline included) is skipped and reported as PluginError frame_too_large. */
function readLine() {
  const parts = [];
  let size = 0;
  let discarding = false;
  for (;;) {
    const nl = unread.indexOf(10);
    if (nl !== -1) {
      const piece = unread.subarray(0, nl);
      unread = unread.subarray(nl + 1);
      if (discarding || size + piece.length + 1 > MAX_FRAME_BYTES) throw tooLarge();
      parts.push(piece);
      return Buffer.concat(parts).toString('utf8');
    }
    if (unread.length) {
      size += unread.length;
      if (!discarding) parts.push(unread);
      unread = Buffer.alloc(0);
      if (size >= MAX_FRAME_BYTES) { discarding = true; parts.length = 0; }
    }
    if (inputEnded) {
      if (discarding) throw tooLarge();
      return size ? Buffer.concat(parts).toString('utf8') : null; // a last line may lack its newline
    }
    const chunk = readChunk();
    if (chunk === null) inputEnded = true;
    else unread = chunk;
  }
}

/** The next frame from the host, parsed and checked against #/$defs/host_frame; null at end of input. */
function readFrame() {
  for (;;) {
    const line = readLine();
    if (line === null) return null;
    if (!line.trim()) continue;
    let frame;
    try {
      frame = JSON.parse(line);
    } catch (err) {
      throw new PluginError('protocol_error', `the host sent a line that is not JSON: ${line.slice(0, 120)}`);
    }
    const problems = frameValidator().checkFrame(frame, 'host_to_plugin');
    if (problems.length) throw new PluginError('protocol_error', `the host sent a frame that breaks the protocol: ${problems.slice(0, 3).join('; ')}`);
    return frame;
  }
}

// ---------------------------------------------------------------- values: bytes and tables

let scratch = null;
function scratchDir() {
  if (scratch === null) {
    scratch = process.env.BENCHBOOK_SCRATCH || fs.mkdtempSync(path.join(os.tmpdir(), 'benchbook-scratch-'));
  }
  return scratch;
}

function scratchFile(suffix) {
  return path.join(scratchDir(), `${crypto.randomUUID()}${suffix}`);
}

/** A bytes value (Buffer, Uint8Array or string) as a binary envelope: base64 up to the threshold, else a scratch file. */
function encodeBinary(value, filename) {
  const buf = Buffer.isBuffer(value) ? value : Buffer.from(value);
  const envelope = buf.length <= BINARY_INLINE_THRESHOLD
    ? { encoding: 'base64', data: buf.toString('base64') }
    : { encoding: 'path', path: writeScratch(scratchFile('.bin'), buf) };
  if (filename !== undefined) envelope.filename = filename;
  return envelope;
}

function writeScratch(file, data) {
  fs.writeFileSync(file, data);
  return file;
}

function decodeBinary(envelope) {
  return envelope.encoding === 'base64' ? Buffer.from(envelope.data, 'base64') : fs.readFileSync(envelope.path);
}

/** A table: `columns` (names), `dtypes` (name to integer/float/string/boolean/date/datetime), `data` (name to array). */
class Table {
  constructor(columns, dtypes, data) {
    this.columns = [...columns];
    this.dtypes = { ...dtypes };
    this.data = {};
    for (const c of this.columns) this.data[c] = data[c] ? [...data[c]] : [];
  }

  /** From row objects; `dtypes` gives the columns (in its key order unless `columns` is given). */
  static fromRows(rows, dtypes, columns = Object.keys(dtypes)) {
    const data = Object.fromEntries(columns.map((c) => [c, rows.map((r) => (r[c] === undefined ? null : r[c]))]));
    return new Table(columns, dtypes, data);
  }

  get length() { return this.columns.length ? this.data[this.columns[0]].length : 0; }

  rows() {
    const out = [];
    for (let i = 0; i < this.length; i += 1) out.push(Object.fromEntries(this.columns.map((c) => [c, this.data[c][i]])));
    return out;
  }
}

function encodeTable(value) {
  const table = value instanceof Table ? value : new Table(value.columns, value.dtypes, value.data);
  if (table.length <= TABLE_INLINE_ROWS) {
    return { encoding: 'inline', columns: table.columns, dtypes: table.dtypes, data: table.data };
  }
  const file = scratchFile('.ndjson');
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, `${JSON.stringify({ columns: table.columns, dtypes: table.dtypes })}\n`);
    const lines = [];
    for (const row of table.rows()) {
      lines.push(JSON.stringify(row));
      if (lines.length === 10000) { fs.writeSync(fd, `${lines.join('\n')}\n`); lines.length = 0; }
    }
    if (lines.length) fs.writeSync(fd, `${lines.join('\n')}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return { encoding: 'ndjson_path', path: file };
}

function decodeTable(envelope) {
  if (envelope.encoding === 'inline') return new Table(envelope.columns, envelope.dtypes, envelope.data);
  const lines = fs.readFileSync(envelope.path, 'utf8').split('\n').filter((l) => l.trim());
  const header = lines.length ? JSON.parse(lines[0]) : null;
  const problems = frameValidator().check('ndjson_header', header);
  if (problems.length) throw new PluginError('invalid_input', `${envelope.path}: bad NDJSON table header: ${problems[0]}`);
  return Table.fromRows(lines.slice(1).map((l) => JSON.parse(l)), header.dtypes, header.columns);
}

function isoDate(d) { return d.toISOString().slice(0, 10); }

function decodeInputs(inputs, ports) {
  const out = { ...inputs };
  for (const [name, value] of Object.entries(inputs)) {
    const type = ports[name] && ports[name].type;
    if (value === null || value === undefined) continue;
    if (type === 'bytes') out[name] = decodeBinary(value);
    else if (type === 'table') out[name] = decodeTable(value);
  }
  return out;
}

function encodeOutputs(outputs, ports) {
  const out = {};
  for (const [name, value] of Object.entries(outputs)) {
    if (value === undefined) continue;
    const type = ports[name] && ports[name].type;
    if (value === null) out[name] = null;
    else if (type === 'bytes' || (type === undefined && (Buffer.isBuffer(value) || value instanceof Uint8Array))) out[name] = encodeBinary(value);
    else if (type === 'table' || (type === undefined && value instanceof Table)) out[name] = encodeTable(value);
    else if (type === 'date' && value instanceof Date) out[name] = isoDate(value);
    else if (type === 'datetime' && value instanceof Date) out[name] = value.toISOString();
    else out[name] = value;
  }
  return out;
}

// ---------------------------------------------------------------- ctx

let callSeq = 0;

class Context {
  constructor(frame, tier) {
    this.tier = tier;
    this.config = frame.config;
    this.capabilities = frame.capabilities || [];
    this.isolation = isolation;
  }

  get scratch() { return scratchDir(); }

  /** A `log` frame (stream `log`) per line of the formatted arguments. */
  log(...args) {
    flushStray();
    for (const line of util.format(...args).split('\n')) sendFrame({ type: 'log', message: line, stream: 'log' });
  }

  /** One RPC: sends rpc_call, blocks for the matching rpc_result (returns its result) or error (throws PluginError). */
  call(method, params = {}) {
    if (this.tier !== 1) throw new PluginError('rpc_unavailable', `${method}: rpc_call is not available in tier 2`);
    callSeq += 1;
    const callId = `c${callSeq}`;
    flushStray();
    sendFrame({ type: 'rpc_call', call_id: callId, method, params });
    const answer = readFrame();
    if (answer === null) throw new PluginError('protocol_error', `standard input ended while ${method} (${callId}) waited for its answer`);
    if (answer.type === 'rpc_result' && answer.call_id === callId) return answer.result;
    if (answer.type === 'error' && answer.call_id === callId) {
      const { kind, message, retryable } = answer.error;
      throw new PluginError(kind, `${method}: ${message}`, { retryable, callId });
    }
    throw new PluginError('protocol_error', `expected the answer to ${callId}, got a ${answer.type} frame`);
  }

  /** A stored file by sha256: {content: Buffer, filename, size}. */
  getFile(sha256) {
    const r = this.call('get_file', { sha256 });
    return { content: decodeBinary(r), filename: r.filename, size: r.size };
  }

  updateRecord(recordId, data) { return this.call('update_record', { record_id: recordId, data }); }

  createRecord({ collection, schemaName, data, parentRecordId = null }) {
    return this.call('create_record', { collection, schema_name: schemaName, parent_record_id: parentRecordId, data });
  }

  commit() { return this.call('commit', {}); }

  callTool(tool, args = {}) { return this.call('call_tool', { tool, args }); }

  getContextRecord() { return this.callTool('get_context_record', {}); }

  findRecords({ collection, schema, filter = {}, limit = 50 } = {}) {
    return this.callTool('find_records', { collection, schema, filter, limit });
  }

  getSchema(name) { return this.callTool('get_schema', { name }); }

  /** Store bytes as a file: {sha256, filename, size}. */
  storeFile(filename, content) { return this.callTool('store_file', { filename, content: encodeBinary(content) }); }
}

// ---------------------------------------------------------------- turns

function describeResult(plugin) {
  return {
    type: 'describe_result',
    id: plugin.id,
    name: plugin.name,
    description: plugin.description || '',
    category: plugin.category || 'general',
    capabilities: plugin.capabilities || [],
    inputs: plugin.inputs || {},
    outputs: plugin.outputs || {},
    config_schema: plugin.config_schema || {},
    ...(plugin.batch ? { batch: true } : {}),
  };
}

function failure(err) {
  if (err instanceof PluginError) return errorFrame(err.kind, err.message, err.retryable);
  toStderr(`${err && err.stack ? err.stack : String(err)}\n`);
  return errorFrame('plugin_error', err && err.message ? err.message : String(err));
}

/** One failed item of a batch: {index, kind, message, retryable} (README.md, "Batches"). */
function itemError(index, err) {
  if (err instanceof PluginError) return { index, kind: err.kind, message: String(err.message), retryable: Boolean(err.retryable) };
  return { index, kind: 'plugin_error', message: err && err.message ? err.message : String(err), retryable: false };
}

/** A batch run: run(items, config, ctx) once for every item whose inputs decode; the answer's
 * outputs in the items' order, null and an `errors` entry for each item that failed. */
async function answerBatch(plugin, items, config, ctx) {
  const outputs = new Array(items.length).fill(null);
  const errors = [];
  const passed = [];
  const decoded = [];
  items.forEach((item, index) => {
    try {
      decoded.push(decodeInputs(item, plugin.inputs || {}));
      passed.push(index);
    } catch (err) { // this item alone, and run() never sees it
      errors.push({ index, kind: 'invalid_input', message: `inputs cannot be decoded: ${err && err.message ? err.message : String(err)}`, retryable: false });
    }
  });
  if (passed.length) {
    const returned = await plugin.run(decoded, config, ctx);
    if (!Array.isArray(returned) || returned.length !== passed.length) {
      throw new PluginError('invalid_output', `a batch run() must return an array with one element per input (${passed.length}), got ${Array.isArray(returned) ? `${returned.length} element(s)` : typeof returned}`);
    }
    returned.forEach((got, i) => {
      const index = passed[i];
      if (got instanceof Error) errors.push(itemError(index, got));
      else if (got === null || typeof got !== 'object' || Array.isArray(got)) {
        errors.push({ index, kind: 'invalid_output', message: 'an element of the returned array is neither an object of outputs nor an Error', retryable: false });
      } else {
        try {
          const encoded = encodeOutputs(got, plugin.outputs || {});
          JSON.stringify(encoded); // a value JSON cannot hold (a BigInt, a cycle) fails this item, not the frame
          outputs[index] = encoded;
        } catch (err) {
          errors.push({ index, kind: 'invalid_output', message: `outputs cannot be encoded: ${err && err.message ? err.message : String(err)}`, retryable: false });
        }
      }
    });
  }
  errors.sort((a, b) => a.index - b.index);
  return { type: 'result', outputs, ...(errors.length ? { errors } : {}) };
}

async function answer(plugin, frame, tier) {
  if (frame.type === 'describe') return describeResult(plugin);
  const ctx = new Context(frame, tier);
  if (Array.isArray(frame.inputs) && !plugin.batch) {
    throw new PluginError('protocol_error', "this plugin does not take batches (serve it with batch: true), but the run frame's inputs is a list");
  }
  if (plugin.batch) {
    const single = !Array.isArray(frame.inputs); // a host that does not batch: one item, a plain answer
    const result = await answerBatch(plugin, single ? [frame.inputs] : frame.inputs, frame.config, ctx);
    if (!single) return result;
    if (result.errors) throw new PluginError(result.errors[0].kind, result.errors[0].message, { retryable: result.errors[0].retryable });
    return { type: 'result', outputs: result.outputs[0] };
  }
  const inputs = decodeInputs(frame.inputs, plugin.inputs || {});
  const outputs = await plugin.run(inputs, frame.config, ctx);
  if (outputs !== undefined && (outputs === null || typeof outputs !== 'object' || Array.isArray(outputs))) {
    throw new PluginError('invalid_output', 'run() must return an object of outputs');
  }
  return { type: 'result', outputs: encodeOutputs(outputs || {}, plugin.outputs || {}) };
}

/** One turn: answer `frame` (describe or run) with exactly one final frame. */
async function turn(plugin, frame, tier) {
  inTurn = true;
  let final;
  try {
    final = await answer(plugin, frame, tier);
  } catch (err) {
    final = failure(err);
  }
  flushStray();
  try {
    sendFrame(final);
  } catch (err) {
    sendFrame(failure(err));
  }
  inTurn = false;
}

function refuse(err) {
  inTurn = true;
  sendFrame(failure(err));
  inTurn = false;
}

async function serveTier1(plugin) {
  for (;;) {
    let frame;
    try {
      frame = readFrame();
    } catch (err) {
      if (!(err instanceof PluginError)) throw err; // a read failure: give up (exit status 1)
      refuse(err); // a bad line where a request was due: answer it, then go on
      continue;
    }
    if (frame === null) return 0;
    if (frame.type === 'describe' || frame.type === 'run') {
      await turn(plugin, frame, 1);
    } else {
      toStderr(`benchbook-plugin: ignored a ${frame.type} frame outside an rpc_call\n`);
    }
  }
}

async function serveTier2(plugin, mode) {
  let frame;
  try {
    frame = readFrame();
  } catch (err) {
    if (!(err instanceof PluginError)) throw err;
    refuse(err);
    return 0;
  }
  if (frame === null) {
    refuse(new PluginError('protocol_error', `tier 2 ${mode}: no frame on standard input`));
    return 1;
  }
  if (frame.type !== mode) {
    refuse(new PluginError('protocol_error', `tier 2 ${mode}: expected a ${mode} frame, got ${frame.type}`));
    return 0;
  }
  await turn(plugin, frame, 2);
  return 0;
}

/** Serve `plugin` on the wire: tier 2 when argv[2] is `describe` or `run`, tier 1 otherwise. Exits the process when done. */
async function serve(plugin, argv = process.argv) {
  const mode = argv[2];
  let code;
  try {
    code = mode === 'describe' || mode === 'run' ? await serveTier2(plugin, mode) : await serveTier1(plugin);
  } catch (err) {
    toStderr(`benchbook-plugin: ${err && err.stack ? err.stack : err}\n`);
    code = 1;
  }
  flushStray();
  process.exit(code);
}

module.exports = {
  serve,
  Table,
  PluginError,
  encodeBinary,
  decodeBinary,
  encodeTable,
  decodeTable,
  isolation,
  MAX_FRAME_BYTES,
  BINARY_INLINE_THRESHOLD,
  TABLE_INLINE_ROWS,
};
