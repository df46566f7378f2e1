import { useState } from "preact/hooks";
import { ApiError, checkKey } from "../api.js";

/** Sign in with an API key (tenant or admin); it is checked against the API before it is kept. */
export function SignIn({ onSignedIn, reason }: { onSignedIn: (key: string) => void; reason: string | null }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(reason);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    const candidate = key.trim();
    if (!candidate) return setError("Enter an API key.");
    setBusy(true);
    setError(null);
    try {
      await checkKey(candidate);
      onSignedIn(candidate);
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401
          ? "That key was not accepted: it is unknown, malformed or revoked."
          : failure instanceof ApiError
            ? failure.message
            : String(failure),
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Conveyor</h1>
      <form onSubmit={submit} aria-label="sign in">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder="cvk_…"
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error ? (
          <p class="problem" role="alert">
            {error}
          </p>
        ) : null}
        <p class="muted">
          A tenant key shows its tenant's jobs; an admin key shows every tenant. Create one with <code>conveyor keys create</code>;{" "}
          <code>conveyor dev</code> prints an admin key.
        </p>
      </form>
    </main>
  );
}
