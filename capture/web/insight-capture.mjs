// The ES-module twin of insight-capture.js: `import InsightCapture from './insight-capture.mjs'`.
// It loads the classic script (which defines globalThis.InsightCapture) and re-exports it, so
// that the two can never differ.
import './insight-capture.js';

const InsightCapture = globalThis.InsightCapture;
export default InsightCapture;
export const { start, finish, version } = InsightCapture;
