/** Test helpers of @roster/engines: a local server that answers like an embeddings API (OpenAI's or Ollama's). */
export {
  closedBaseUrl,
  closeFarSides,
  inputsOf,
  ollamaAnswer,
  openAIAnswer,
  rawVector,
  rejectionOf,
  retryNow,
  sendJson,
  startFarSide,
  unit,
} from './embedding-far-side.js';
