'use strict';
// An example benchbook plugin: counts the words of a text. Run it as `node example-plugin.js`
// (tier 1) or `node example-plugin.js describe|run` (tier 2, one frame on standard input).
const bb = require('./benchbook-plugin'); // first: isolates stdout before anything else runs

bb.serve({
  id: 'example.word_count',
  name: 'Word count',
  description: 'Counts the words of a text; in tier 1 also reports the record the run is for.',
  category: 'text',
  capabilities: ['get_context_record'],
  inputs: {
    text: { type: 'string', description: 'The text to count', required: true },
  },
  outputs: {
    words: { type: 'integer', description: 'Number of words' },
    unique_words: { type: 'integer', description: 'Number of distinct words' },
    counts: { type: 'table', description: 'Each distinct word and how often it occurs' },
    record_id: { type: 'string', description: 'The record the run is for (tier 1 only)' },
  },
  config_schema: {
    type: 'object',
    properties: { lowercase: { type: 'boolean', default: true } },
    additionalProperties: false,
  },

  run(inputs, config, ctx) {
    const text = config.lowercase === false ? inputs.text : inputs.text.toLowerCase();
    const words = text.split(/[^\p{L}\p{N}']+/u).filter(Boolean);
    const counts = new Map();
    for (const w of words) counts.set(w, (counts.get(w) || 0) + 1);
    ctx.log(`counted ${words.length} words, ${counts.size} distinct`);

    // rpc_call needs tier 1; a capability_denied answer propagates as this run's error frame
    const record = ctx.tier === 1 ? ctx.getContextRecord() : null;

    return {
      words: words.length,
      unique_words: counts.size,
      counts: bb.Table.fromRows([...counts].map(([word, n]) => ({ word, n })), { word: 'string', n: 'integer' }),
      record_id: record ? String(record.id) : null,
    };
  },
});
