export {
  describeEnvironment,
  environment,
  environmentVariables,
  parseConfig,
  redactConfig,
  redactUrl,
  secretVariables,
  type Config,
  type EnvironmentVariable,
} from './env.js';
export { createLogger, redactedPaths, type Logger } from './logger.js';
export { isRedisUrl, parseRedisUrl, redisProtocols, type RedisTarget } from './redis-url.js';
export { isLoopbackAddress, isLoopbackUrl } from './loopback.js';
export { makePrivateFolder, privateFileMode, privateFolderMode, tightenFolder, writePrivateFile } from './private-files.js';
export {
  InstallationKey,
  installationKeyFormat,
  keyFileName,
  loadInstallationKey,
  minimumKeyBytes,
  parseInstallationKey,
} from './installation-key.js';
