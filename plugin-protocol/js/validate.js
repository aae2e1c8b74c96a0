'use strict';
/**
 * A dependency-free validator for benchbook plugin frames: the subset of JSON Schema 2020-12 that
 * ../frames.schema.json uses, driven by that file (no per-frame rules live here).
 *
 * Library:
 *   const { loadValidator } = require('./validate');
 *   const v = loadValidator();                      // reads frames.schema.json
 *   v.check('host_frame', frame)                    // [] or ['$.error: \'retryable\' is a required property', ...]
 *   v.checkFrame(frame, 'plugin_to_host')           // host_frame / plugin_frame by direction
 *
 * Command line (conformance vectors, see ../vectors/README.md):
 *   node validate.js FILE_OR_FOLDER...
 * prints one JSON line per vector {file, expected, valid, ok, errors} and exits 1 when any vector's
 * outcome disagrees with its `valid` flag or an invalid vector's messages miss its `violation`.
 *
 * Every message starts with the JSON path of the offending part (`$`, `$.error.kind`,
 * `$.capabilities[1]`). A keyword the validator does not implement makes loading the schema fail,
 * so the schema cannot grow a rule this file silently ignores.
 */
const fs = require('fs');
const path = require('path');

const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples',
  'contentEncoding', 'contentMediaType', 'deprecated', 'readOnly', 'writeOnly']);
const KEYWORDS = new Set(['$ref', '$defs', 'type', 'enum', 'const', 'required', 'properties',
  'additionalProperties', 'propertyNames', 'items', 'uniqueItems', 'minLength', 'maxLength', 'pattern',
  'minimum', 'maximum', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else']);

/** Where frames.schema.json is: next to this file (a copied starter) or one folder up (the repository). */
function findSchema() {
  for (const candidate of [path.join(__dirname, 'frames.schema.json'), path.join(__dirname, '..', 'frames.schema.json')]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error('frames.schema.json not found next to validate.js or in its parent folder; copy it along with the starter');
}

/** JSON text with sorted keys: equal for equal JSON values. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function show(value) {
  const text = value === undefined ? 'undefined' : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function typeOf(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value; // object, string, number, boolean
}

function hasType(value, type) {
  switch (type) {
    case 'integer': return typeof value === 'number' && Number.isInteger(value);
    case 'number': return typeof value === 'number' && Number.isFinite(value);
    default: return typeOf(value) === type;
  }
}

function childPath(base, key) {
  if (typeof key === 'number') return `${base}[${key}]`;
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `${base}.${key}` : `${base}[${JSON.stringify(key)}]`;
}

class Validator {
  constructor(schema) {
    this.root = schema;
    this.patterns = new Map();
    this.compile(schema, '#');
  }

  /** Walk the schema once: refuse keywords this validator does not implement, resolve refs, build regexes. */
  compile(schema, where) {
    if (typeof schema === 'boolean') return;
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) throw new Error(`${where}: not a schema`);
    for (const [key, sub] of Object.entries(schema)) {
      if (ANNOTATIONS.has(key)) continue;
      if (!KEYWORDS.has(key)) throw new Error(`${where}: validate.js does not implement the keyword ${key}`);
      if (key === '$defs' || key === 'properties') {
        for (const [name, s] of Object.entries(sub)) this.compile(s, `${where}/${key}/${name}`);
      } else if (['allOf', 'anyOf', 'oneOf'].includes(key)) {
        sub.forEach((s, i) => this.compile(s, `${where}/${key}/${i}`));
      } else if (['additionalProperties', 'propertyNames', 'items', 'not', 'if', 'then', 'else'].includes(key)) {
        this.compile(sub, `${where}/${key}`);
      } else if (key === '$ref') {
        this.resolve(sub);
      } else if (key === 'pattern') {
        this.patterns.set(sub, new RegExp(sub, 'u'));
      }
    }
  }

  resolve(ref) {
    if (!ref.startsWith('#')) throw new Error(`validate.js resolves only local references, not ${ref}`);
    let node = this.root;
    for (const raw of ref.slice(1).split('/').slice(1)) {
      const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (node === null || typeof node !== 'object' || !(part in node)) throw new Error(`unresolvable reference ${ref}`);
      node = node[part];
    }
    return node;
  }

  /** Messages for every way `value` breaks `#/$defs/<definition>` (or the root when omitted); [] if it conforms. */
  check(definition, value) {
    const schema = definition ? this.resolve(`#/$defs/${definition}`) : this.root;
    const errors = [];
    this.validate(schema, value, '$', errors);
    return errors;
  }

  /** Messages for a frame sent in `direction` (`host_to_plugin` or `plugin_to_host`). */
  checkFrame(frame, direction) {
    if (direction === 'host_to_plugin') return this.check('host_frame', frame);
    if (direction === 'plugin_to_host') return this.check('plugin_frame', frame);
    throw new Error(`unknown direction ${direction}`);
  }

  validate(schema, value, at, errors) {
    if (schema === true) return;
    if (schema === false) { errors.push(`${at}: no value is allowed here`); return; }
    const s = schema;
    if (s.$ref !== undefined) this.validate(this.resolve(s.$ref), value, at, errors);
    if (s.type !== undefined) {
      const types = Array.isArray(s.type) ? s.type : [s.type];
      if (!types.some((t) => hasType(value, t))) {
        errors.push(`${at}: ${show(value)} is not of type ${types.map((t) => `'${t}'`).join(', ')}`);
        return; // the other keywords would only repeat the type mismatch
      }
    }
    if (s.enum !== undefined && !s.enum.some((e) => canonical(e) === canonical(value))) {
      errors.push(`${at}: ${show(value)} is not one of ${show(s.enum)}`);
    }
    if (s.const !== undefined && canonical(s.const) !== canonical(value)) {
      errors.push(`${at}: ${show(s.const)} was expected, got ${show(value)}`);
    }
    if (typeof value === 'string') {
      const length = [...value].length;
      if (s.minLength !== undefined && length < s.minLength) {
        errors.push(`${at}: ${show(value)} is shorter than ${s.minLength} characters${s.minLength === 1 ? ' (should be non-empty)' : ''}`);
      }
      if (s.maxLength !== undefined && length > s.maxLength) errors.push(`${at}: ${show(value)} is longer than ${s.maxLength} characters`);
      if (s.pattern !== undefined && !this.patterns.get(s.pattern).test(value)) {
        errors.push(`${at}: ${show(value)} does not match ${show(s.pattern)}`);
      }
    }
    if (typeof value === 'number') {
      if (s.minimum !== undefined && value < s.minimum) errors.push(`${at}: ${value} is less than the minimum of ${s.minimum}`);
      if (s.maximum !== undefined && value > s.maximum) errors.push(`${at}: ${value} is greater than the maximum of ${s.maximum}`);
    }
    if (Array.isArray(value)) {
      if (s.items !== undefined) value.forEach((item, i) => this.validate(s.items, item, childPath(at, i), errors));
      if (s.uniqueItems) {
        const seen = new Set(value.map(canonical));
        if (seen.size !== value.length) errors.push(`${at}: ${show(value)} has non-unique elements`);
      }
    }
    if (typeOf(value) === 'object') {
      for (const name of s.required || []) {
        if (!Object.prototype.hasOwnProperty.call(value, name)) errors.push(`${at}: '${name}' is a required property`);
      }
      const props = s.properties || {};
      const extra = [];
      for (const [name, item] of Object.entries(value)) {
        if (Object.prototype.hasOwnProperty.call(props, name)) {
          this.validate(props[name], item, childPath(at, name), errors);
        } else if (s.additionalProperties === false) {
          extra.push(name);
        } else if (s.additionalProperties !== undefined) {
          this.validate(s.additionalProperties, item, childPath(at, name), errors);
        }
      }
      if (extra.length) {
        errors.push(`${at}: Additional properties are not allowed (${extra.map((n) => `'${n}'`).join(', ')} ${extra.length === 1 ? 'was' : 'were'} unexpected)`);
      }
      if (s.propertyNames !== undefined) {
        for (const name of Object.keys(value)) {
          const sub = [];
          this.validate(s.propertyNames, name, at, sub);
          if (sub.length) errors.push(`${at}: property name ${show(name)} is invalid`, ...sub);
        }
      }
    }
    for (const sub of s.allOf || []) this.validate(sub, value, at, errors);
    if (s.anyOf !== undefined) {
      const branches = s.anyOf.map((sub) => this.collect(sub, value, at));
      if (!branches.some((b) => b.length === 0)) {
        errors.push(`${at}: ${show(value)} is not valid under any of the given schemas`, ...branches.flat());
      }
    }
    if (s.oneOf !== undefined) {
      const branches = s.oneOf.map((sub) => this.collect(sub, value, at));
      const passing = branches.filter((b) => b.length === 0).length;
      if (passing === 0) errors.push(`${at}: ${show(value)} is not valid under any of the given schemas`, ...branches.flat());
      if (passing > 1) errors.push(`${at}: ${show(value)} is valid under more than one of the given schemas`);
    }
    if (s.not !== undefined && this.collect(s.not, value, at).length === 0) {
      errors.push(`${at}: ${show(value)} should not be valid under ${show(s.not)}`);
    }
    if (s.if !== undefined) {
      const branch = this.collect(s.if, value, at).length === 0 ? s.then : s.else;
      if (branch !== undefined) this.validate(branch, value, at, errors);
    }
  }

  collect(schema, value, at) {
    const errors = [];
    this.validate(schema, value, at, errors);
    return errors;
  }
}

function loadValidator(schemaPath = findSchema()) {
  return new Validator(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
}

/** The outcome of one conformance vector file (format: ../vectors/README.md). */
function checkVector(validator, file) {
  const vector = JSON.parse(fs.readFileSync(file, 'utf8'));
  const errors = 'envelope' in vector
    ? validator.check(vector.envelope, vector.value)
    : validator.checkFrame(vector.frame, vector.direction);
  const valid = errors.length === 0;
  const ok = valid === vector.valid && (valid || errors.some((e) => e.includes(vector.violation)));
  return { file, expected: vector.valid, valid, ok, errors };
}

function main(args) {
  if (!args.length) {
    process.stderr.write('usage: node validate.js VECTOR_FILE_OR_FOLDER...\n');
    return 2;
  }
  const files = args.flatMap((arg) => (fs.statSync(arg).isDirectory()
    ? fs.readdirSync(arg).filter((n) => n.endsWith('.json')).sort().map((n) => path.join(arg, n))
    : [arg]));
  const validator = loadValidator();
  let failed = 0;
  for (const file of files) {
    const outcome = checkVector(validator, file);
    if (!outcome.ok) failed += 1;
    process.stdout.write(`${JSON.stringify(outcome)}\n`);
  }
  return failed ? 1 : 0;
}

module.exports = { loadValidator, Validator, checkVector, findSchema };

if (require.main === module) process.exitCode = main(process.argv.slice(2));
