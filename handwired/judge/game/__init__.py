"""The game: puzzle statements read whole or light, found in the catalogue, an answer's verdict and score, and a
player's progress."""
