"""Each page kind's figures, language-neutral, computed from the validated catalog by the engines."""
