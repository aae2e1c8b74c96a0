'use strict';
// An example batch plugin: classifies flight delays, many runs per frame. Run it as
// `node example-batch-plugin.js` (tier 1). With `batch: true` the host sends a list of inputs,
// one per run of the step, and run() answers an array in the same order; an element that is an
// Error fails that run alone.
const bb = require('./benchbook-plugin'); // first: isolates stdout before anything else runs

bb.serve({
  id: 'example.delay_class',
  name: 'Delay class',
  description: 'Classifies a delay in minutes as early, on time or late.',
  category: 'analysis',
  capabilities: [],
  batch: true,
  inputs: {
    minutes: { type: 'integer', description: 'The delay in minutes (negative: early)' },
  },
  outputs: {
    label: { type: 'string', description: 'early, on time or late', required: true },
  },
  config_schema: {
    type: 'object',
    properties: { late_after: { type: 'integer', default: 15 } },
    additionalProperties: false,
  },

  run(items, config, ctx) {
    const lateAfter = config.late_after === undefined ? 15 : config.late_after;
    ctx.log(`${items.length} delay(s)`);
    return items.map((inputs) => {
      if (inputs.minutes === null || inputs.minutes === undefined) return new bb.PluginError('invalid_input', 'no delay');
      if (inputs.minutes < 0) return { label: 'early' };
      return { label: inputs.minutes > lateAfter ? 'late' : 'on time' };
    });
  },
});
