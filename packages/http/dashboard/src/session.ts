// The API key lives in sessionStorage: it is gone when the tab closes, and
// never in a URL the server sees. `conveyor dev` prints a link with the key
// in the fragment (#key=…), which is read once and removed from the address bar.

const STORAGE_KEY = "conveyor.apiKey";

export function loadKey(): string | null {
  const fromLink = /^#key=([A-Za-z0-9_-]+)$/.exec(window.location.hash)?.[1];
  if (fromLink) {
    saveKey(fromLink);
    history.replaceState(null, "", `${window.location.pathname}${window.location.search}#/`);
    return fromLink;
  }
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function saveKey(key: string): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, key);
  } catch {
    // storage disabled: the key lasts as long as the page
  }
}

export function forgetKey(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // nothing stored
  }
}
