import net from 'node:net';
import type { WhatsAppSocketFactory } from '@roster/channel-whatsapp';

/**
 * The sockets of a WhatsApp far side made by `factory`, each also a TCP
 * connection to the registry on `port` (`open <number>` once opened),
 * closed when the socket is ended, and by the kernel when its process is
 * killed: the registry sees a number's connections as WhatsApp's servers do.
 */
export function registeredSockets(factory: WhatsAppSocketFactory, port: number, number: string): WhatsAppSocketFactory {
  return (socketConfig) => {
    const socket = factory(socketConfig);
    const line = net.connect(port, '127.0.0.1', () => line.write(`open ${number}\n`));
    line.on('error', () => undefined);
    const end = socket.end.bind(socket);
    return Object.assign(socket, {
      end(error: Error | undefined) {
        line.end();
        return end(error);
      },
    });
  };
}

/** The registry: a number's connections open now, opened ever, and the most open at once. */
export async function startRegistry(): Promise<{ port: number; open(): number; opened(): number; most(): number; close(): Promise<void> }> {
  let open = 0;
  let opened = 0;
  let most = 0;
  const server = net.createServer((socket) => {
    let counted = false;
    socket.on('data', () => {
      if (counted) return;
      counted = true;
      open += 1;
      opened += 1;
      most = Math.max(most, open);
    });
    socket.on('close', () => {
      if (counted) open -= 1;
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    open: () => open,
    opened: () => opened,
    most: () => most,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
