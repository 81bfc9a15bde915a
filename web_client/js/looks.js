// How each model looks, shared by the 3D view (view.js) and the class dashboard's 2D tiles
// (tile.js), so both draw grains, water and bodies in the same colours.

// How each model is drawn, in one table (the only place the client names a model): slow and fast
// colour (shade is speed), background, lit or self-lit, the material's roughness, shadows; `tank`:
// its box walls stand a little above the particles (water), not 2.5 m high; `framed`: the camera
// frames the particles at the first keyframe even over a floor; `swarm`: many bodies framed
// around their median, with a minimum drawn radius so distant ones stay visible.
export const LOOKS = {
  granular: { slow: 0xd9b98a, fast: 0xff5a1f, background: 0x1b2330, lit: true, roughness: 0.85, shadows: true },
  fluid: { slow: 0x2f7fd0, fast: 0xd8f1ff, background: 0x1b2330, lit: true, roughness: 0.35, shadows: true, tank: true, framed: true },
  gravity: { slow: 0xfff1c4, fast: 0x9fd4ff, background: 0x04060b, lit: false, shadows: false, framed: true, swarm: true },
};
