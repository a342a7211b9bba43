import { fileURLToPath } from 'node:url';

/**
 * The built page: index.html and its hashed assets, as an absolute path. The
 * server serves this folder as static files; `npm run build` fills it.
 */
export const publicDirectory: string = fileURLToPath(new URL('./public/', import.meta.url));

/**
 * The addresses that open the page itself. The page routes in the browser, so
 * the server answers each of these with index.html (a reload of /memory, or a
 * login link to /login#TOKEN, lands on the page).
 */
export const pagePaths: readonly string[] = ['/', '/login', '/agents', '/chat', '/memory', '/lessons', '/mirror', '/people', '/channels', '/audit', '/account'];

/** The file that holds the page shell, inside `publicDirectory`. */
export const pageShell = 'index.html';
