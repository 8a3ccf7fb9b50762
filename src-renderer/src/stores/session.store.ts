import { defineStore } from 'pinia';
import { ref } from 'vue';
import { getToken, onUnauthorized, setToken } from '../api/http';

/**
 * Who the studio signs in as. A token in the URL fragment (`#token=…`, from the start-up link or an
 * OIDC login) is stored in local storage and removed from the address bar.
 */
export const useSessionStore = defineStore('session', () => {
  const token = ref<string | null>(getToken());
  const needsSignIn = ref(false);

  function takeTokenFromFragment(): void {
    const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (!match) return;
    setToken(decodeURIComponent(match[1]!));
    token.value = getToken();
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }

  function signIn(value: string): void {
    setToken(value.trim());
    token.value = getToken();
    needsSignIn.value = false;
  }

  function signOut(): void {
    setToken(null);
    token.value = null;
    needsSignIn.value = true;
  }

  onUnauthorized(() => {
    needsSignIn.value = true;
  });

  return { token, needsSignIn, takeTokenFromFragment, signIn, signOut };
});
