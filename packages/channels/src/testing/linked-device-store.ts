/**
 * The conformance suite of `LinkedDeviceStore` (`@roster/contracts`): what
 * every store of a linked device's session must do, step by step. The
 * host's store in Postgres runs it, and so does any stand-in a plugin's
 * tests keep the session in, so that the stand-in is known to behave as the
 * store the plugin gets in production. Test-only: it imports vitest.
 */
import { randomUUID } from 'node:crypto';
import type { LinkedDeviceStore } from '@roster/contracts';
import { describe, expect, it } from 'vitest';

const phone = '+4915550000000';

/** `open(account)` gives the store of one account; each case asks for accounts of its own. */
export function describeLinkedDeviceStoreConformance(name: string, open: (account: string) => LinkedDeviceStore): void {
  describe(`linked-device store conformance: ${name}`, () => {
    const fresh = () => open(`conformance-${randomUUID().slice(0, 8)}`);

    it('stores nothing for an account never shown a code nor linked; what only changes a session leaves none', async () => {
      const store = fresh();
      expect(await store.read()).toBeNull();
      await store.setConnection('linked');
      await store.pairingEnded();
      expect(await store.beginPairing()).toBe(true);
      expect(await store.read()).toBeNull();
      expect(await store.readKeys('pre-key', ['1'])).toEqual(new Map());
    });

    it('shows a code while not linked, links with the credentials, and refuses a code or a new pairing once linked', async () => {
      const store = fresh();
      expect(await store.showCode('code-1')).toBe(true);
      expect(await store.read()).toMatchObject({ status: 'waiting_for_scan', phone: null, codeSealed: 'code-1', credentialsSealed: null });
      expect(await store.showCode('code-2')).toBe(true);
      expect((await store.read())?.codeSealed).toBe('code-2');
      // Its account is the one it was opened for.
      expect(await open(store.account).read()).toMatchObject({ codeSealed: 'code-2' });

      await store.saveCredentials(phone, 'credentials-1');
      const linked = await store.read();
      expect(linked).toMatchObject({ status: 'linked', phone, codeSealed: null, credentialsSealed: 'credentials-1' });
      expect(linked?.updatedAt).toBeInstanceOf(Date);
      expect(await store.showCode('code-3')).toBe(false);
      expect(await store.beginPairing()).toBe(false);
      expect(await store.read()).toMatchObject({ status: 'linked', codeSealed: null, credentialsSealed: 'credentials-1' });
      await store.saveCredentials(phone, 'credentials-2');
      expect((await store.read())?.credentialsSealed).toBe('credentials-2');
      // A pairing that ends changes nothing of a linked session.
      await store.pairingEnded();
      expect(await store.read()).toMatchObject({ status: 'linked', credentialsSealed: 'credentials-2' });
    });

    it('records the connection of a linked device only, and credentials saved while reconnecting keep that status', async () => {
      const store = fresh();
      await store.saveCredentials(phone, 'credentials');
      await store.setConnection('reconnecting');
      expect((await store.read())?.status).toBe('reconnecting');
      await store.saveCredentials(phone, 'credentials-again');
      expect((await store.read())?.status).toBe('reconnecting');
      await store.setConnection('linked');
      expect((await store.read())?.status).toBe('linked');

      const waiting = fresh();
      await waiting.showCode('code');
      await waiting.setConnection('linked');
      expect((await waiting.read())?.status).toBe('waiting_for_scan');
    });

    it('ends a pairing: the code goes, the session still waits', async () => {
      const store = fresh();
      await store.showCode('code');
      await store.pairingEnded();
      expect(await store.read()).toMatchObject({ status: 'waiting_for_scan', codeSealed: null, credentialsSealed: null });
    });

    it('keeps keys by kind and id, per account; a change set writes and deletes together', async () => {
      const store = fresh();
      const other = fresh();
      await store.writeKeys([
        { kind: 'pre-key', id: '1', sealed: 'p1' },
        { kind: 'pre-key', id: '2', sealed: 'p2' },
        { kind: 'session', id: '1', sealed: 's1' },
      ]);
      await other.writeKeys([{ kind: 'pre-key', id: '1', sealed: 'other' }]);
      expect(await store.readKeys('pre-key', ['1', '2', '3'])).toEqual(new Map([['1', 'p1'], ['2', 'p2']]));
      expect(await store.readKeys('session', ['1', '2'])).toEqual(new Map([['1', 's1']]));
      expect(await store.readKeys('pre-key', [])).toEqual(new Map());
      expect(await other.readKeys('pre-key', ['1', '2'])).toEqual(new Map([['1', 'other']]));

      await store.writeKeys([
        { kind: 'pre-key', id: '1', sealed: null },
        { kind: 'pre-key', id: '2', sealed: 'p2-new' },
        { kind: 'pre-key', id: '9', sealed: null },
      ]);
      expect(await store.readKeys('pre-key', ['1', '2'])).toEqual(new Map([['2', 'p2-new']]));
      await store.writeKeys([]);
      expect(await store.readKeys('session', ['1'])).toEqual(new Map([['1', 's1']]));
    });

    it('records a logout: keys, credentials and code go, the number stays; a new pairing starts clean', async () => {
      const store = fresh();
      const other = fresh();
      await store.saveCredentials(phone, 'credentials');
      await store.writeKeys([{ kind: 'pre-key', id: '1', sealed: 'p1' }]);
      await other.writeKeys([{ kind: 'pre-key', id: '1', sealed: 'kept' }]);

      await store.loggedOut();
      expect(await store.read()).toMatchObject({ status: 'logged_out', phone, codeSealed: null, credentialsSealed: null });
      expect(await store.readKeys('pre-key', ['1'])).toEqual(new Map());
      expect(await other.readKeys('pre-key', ['1'])).toEqual(new Map([['1', 'kept']]));
      await store.setConnection('linked');
      expect((await store.read())?.status).toBe('logged_out');

      // Linking again: a code is shown (the old number still said), then new credentials.
      expect(await store.showCode('code')).toBe(true);
      expect(await store.read()).toMatchObject({ status: 'waiting_for_scan', phone, codeSealed: 'code' });
      expect(await store.beginPairing()).toBe(true);
      await store.saveCredentials('+4915550000001', 'credentials-new');
      expect(await store.read()).toMatchObject({ status: 'linked', phone: '+4915550000001', codeSealed: null, credentialsSealed: 'credentials-new' });

      const never = fresh();
      await never.loggedOut();
      expect(await never.read()).toMatchObject({ status: 'logged_out', phone: null, credentialsSealed: null });
    });

    it('begins a pairing by dropping what a logged-out or abandoned one left', async () => {
      const abandoned = fresh();
      // A pairing that wrote keys before any credentials were stored, and was never scanned.
      await abandoned.showCode('code');
      await abandoned.writeKeys([{ kind: 'pre-key', id: '1', sealed: 'p1' }]);
      expect(await abandoned.beginPairing()).toBe(true);
      expect(await abandoned.readKeys('pre-key', ['1'])).toEqual(new Map());
      expect(await abandoned.read()).toMatchObject({ status: 'waiting_for_scan', codeSealed: 'code', credentialsSealed: null });

      const loggedOut = fresh();
      await loggedOut.saveCredentials(phone, 'credentials');
      await loggedOut.loggedOut();
      await loggedOut.writeKeys([{ kind: 'session', id: '1', sealed: 's1' }]);
      expect(await loggedOut.beginPairing()).toBe(true);
      expect(await loggedOut.readKeys('session', ['1'])).toEqual(new Map());
      expect(await loggedOut.read()).toMatchObject({ status: 'logged_out', phone, credentialsSealed: null });
    });
  });
}
