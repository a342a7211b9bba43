export { channelPlugin, type MatrixSettings } from './plugin.js';
export { checkMatrixAccount, createMatrixAdapter, type MatrixAdapter, type MatrixAdapterOptions } from './matrix-adapter.js';
export { toChannelError } from './matrix-errors.js';
export { matrixTextLimit } from './matrix-text.js';
