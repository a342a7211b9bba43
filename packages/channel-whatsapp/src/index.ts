export { createWhatsAppAdapter, approvalCode, whatsappTextLimit, type WhatsAppAdapterOptions } from './whatsapp-adapter.js';
export { toChannelError } from './channel-errors.js';
export { makeBaileysSocket, type WhatsAppSocket, type WhatsAppSocketFactory } from './connection.js';
export { linkWhatsApp, type LinkWhatsAppOptions } from './link.js';
export { phoneOf, WhatsAppSession, type WhatsAppLink } from './session.js';
export { qrSvg, qrText } from './qr.js';
export { channelPlugin } from './plugin.js';
