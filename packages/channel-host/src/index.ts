export { answersGraceMs, serveChannel, type ApprovalDesk, type ServeChannelOptions, type ServedChannel } from './serve.js';
export { createChannelCredentialStore, type ChannelCredentialStore, type CredentialChannel, type StoredCredentials } from './credentials.js';
