// The 3D view of a session: instanced spheres (radius per grain, shade from speed), the scene's
// geometry, force chains as rods, an orbit camera and shadows. Drags on the floor report (x, z).
// Water is drawn as blue spheres in its tank; N-body bodies as small bright spheres in the dark,
// with no floor, the camera framing the bodies of the first keyframe.
import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { LOOKS } from './looks.js';

export class View {
  constructor(container) {
    this.container = container;
    this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    this.renderer.shadowMap.enabled = true;
    container.appendChild(this.renderer.domElement);
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color(0x1b2330);
    this.camera = new THREE.PerspectiveCamera(45, 1, 0.05, 500);
    this.camera.position.set(4, 3.5, 6);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.target.set(0, 0.5, 0);
    this.scene.add(new THREE.HemisphereLight(0xdde6ff, 0x3a3020, 1.2));
    const sun = new THREE.DirectionalLight(0xffffff, 1.6);
    sun.position.set(5, 10, 4);
    sun.castShadow = true;
    sun.shadow.mapSize.set(1024, 1024);
    Object.assign(sun.shadow.camera, { left: -8, right: 8, top: 8, bottom: -8, near: 1, far: 30 });
    this.scene.add(sun);
    this.world = new THREE.Group(); // turned by −tilt about z: the box tilts, gravity stays down
    this.scene.add(this.world);
    this.statics = new THREE.Group();
    this.world.add(this.statics);
    this.sphere = new THREE.SphereGeometry(1, 12, 8);
    this.coarse = new THREE.SphereGeometry(1, 8, 6); /* thousands of grains: fewer triangles each */
    this.material = new THREE.MeshStandardMaterial({ roughness: 0.85, metalness: 0.0 });
    this.look = LOOKS.granular;
    this.slow = new THREE.Color(LOOKS.granular.slow);
    this.fast = new THREE.Color(LOOKS.granular.fast);
    this.framed = false; // the camera has been aimed at the particles (scenes without a floor)
    this.minRadius = 0; // drawn radius at least this: bodies stay visible from afar
    this.grains = null;
    this.points = null; // the lightest drawing: one shaded sprite per grain
    this.chains = null;
    this.matrix = new THREE.Matrix4();
    this.color = new THREE.Color();
    this.raycaster = new THREE.Raycaster();
    this.floorY = 0;
    this.geometryKey = '';
    new ResizeObserver(() => this.resize()).observe(container);
    this.resize();
    // draw only when something changed: a new frame, a turn of the camera, a resize
    this.dirty = true;
    this.controls.addEventListener('change', () => { this.dirty = true; });
    // a machine that cannot draw fast (no GPU) gets a lighter picture rather than a frozen page:
    // first no shadows, then fewer pixels; and never more than half its time goes to drawing
    this.quality = 2;
    this.cost = 0;
    this.renders = 0;
    let next = 0;
    const loop = (now) => {
      this.controls.update();
      if (this.dirty && now >= next) {
        this.dirty = false;
        const t0 = performance.now();
        this.renderer.render(this.scene, this.camera);
        this.renders++;
        const ms = performance.now() - t0;
        this.cost = this.cost ? 0.8 * this.cost + 0.2 * ms : ms;
        next = now + this.cost;
        if (this.cost > 40 && this.quality > 0) this.lower();
      }
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  // The scene's model ("granular", "fluid", "gravity"): colours, material, lights and framing.
  setModel(model) {
    const look = LOOKS[model] || LOOKS.granular;
    this.look = look;
    this.slow.set(look.slow);
    this.fast.set(look.fast);
    this.scene.background = new THREE.Color(look.background);
    this.material = look.lit
      ? new THREE.MeshStandardMaterial({ roughness: look.roughness, metalness: 0.0 })
      : new THREE.MeshBasicMaterial(); // self-lit: bright points against the dark
    if (!look.lit) this.renderer.shadowMap.enabled = false; // nothing to cast a shadow on
    if (this.grains) this.grains.material = this.material;
    this.dirty = true;
  }

  // Aim the camera at the particles (and a water tank's corners): their bounding sphere; for
  // many bodies, around the median and holding 95 % of them, so a few escaped bodies do not
  // shrink the rest to dots.
  frame(particles, count, g) {
    let p = particles, n = count;
    const tank = this.look.tank && g && g.box && [g.floorY, g.boxX0, g.boxX1, g.boxZ0, g.boxZ1].every(Number.isFinite);
    // a water tank's corners, or a drum's, are framed with the particles: the whole vessel in view
    const corners = [];
    if (tank) {
      const top = this.top(p, n);
      for (const x of [g.boxX0, g.boxX1]) for (const y of [g.floorY, top]) for (const z of [g.boxZ0, g.boxZ1]) corners.push(x, y, z);
    } else if (g && g.drumR > 0 && Number.isFinite(g.boxZ0) && Number.isFinite(g.boxZ1)) {
      for (const x of [-g.drumR, g.drumR]) for (const y of [g.drumY - g.drumR, g.drumY + g.drumR]) for (const z of [g.boxZ0, g.boxZ1]) corners.push(x, y, z);
    }
    if (corners.length) {
      p = Float32Array.from([...p.subarray(0, 3 * n), ...corners]);
      n += corners.length / 3;
    }
    if (n === 0) return;
    const axis = (a) => Float32Array.from({ length: n }, (_, k) => p[3 * k + a]).sort();
    const many = n > 50 && this.look.swarm;
    const c = [0, 1, 2].map((a) => {
      const v = axis(a);
      return many ? v[n >> 1] : (v[0] + v[n - 1]) / 2;
    });
    const d = Float32Array.from({ length: n }, (_, k) => Math.hypot(p[3 * k] - c[0], p[3 * k + 1] - c[1], p[3 * k + 2] - c[2])).sort();
    const r = Math.max(many ? 1.15 * d[Math.floor(0.95 * (n - 1))] : d[n - 1], 0.05) * 1.1;
    // the sphere fits the narrower of the two angles: on a phone held upright that is the
    // horizontal one (a drum's grains filled the view, its wall and slope out of it)
    const half = Math.tan((this.camera.fov * Math.PI) / 360);
    const dist = r / Math.sin(Math.atan(half * Math.min(1, this.camera.aspect || 1)));
    const dir = new THREE.Vector3(0.35, 0.45, 1).normalize();
    this.controls.target.set(c[0], c[1], c[2]);
    this.camera.position.set(c[0] + dir.x * dist, c[1] + dir.y * dist, c[2] + dir.z * dist);
    this.camera.near = Math.max(dist / 1000, 1e-4);
    this.camera.far = dist * 100;
    this.camera.updateProjectionMatrix();
    this.controls.update();
    if (this.look.swarm) this.minRadius = 0.004 * r;
    this.framed = true;
    this.dirty = true;
  }

  lower() {
    this.quality--;
    if (this.quality === 1) {
      this.renderer.shadowMap.enabled = false;
      this.scene.traverse((o) => { if (o.material) o.material.needsUpdate = true; });
    } else if (this.grains) {
      this.grains.visible = false; // spheres as sprites from here on (see ensurePoints)
    }
    this.cost = 0;
    this.dirty = true;
  }

  ensurePoints(n) {
    if (this.points && this.points.userData.n === n) return;
    if (this.points) { this.world.remove(this.points); this.points.geometry.dispose(); }
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(new Float32Array(3 * n), 3).setUsage(THREE.DynamicDrawUsage));
    geo.setAttribute('color', new THREE.BufferAttribute(new Float32Array(3 * n), 3).setUsage(THREE.DynamicDrawUsage));
    geo.setAttribute('size', new THREE.BufferAttribute(new Float32Array(n), 1));
    const material = new THREE.ShaderMaterial({
      uniforms: { scale: { value: 1 } },
      vertexShader: `attribute float size; attribute vec3 color; varying vec3 vColor; uniform float scale;
        void main() { vec4 mv = modelViewMatrix * vec4(position, 1.0); gl_PointSize = size * scale / -mv.z;
                      gl_Position = projectionMatrix * mv; vColor = color; }`,
      fragmentShader: `varying vec3 vColor;
        void main() { vec2 c = gl_PointCoord * 2.0 - 1.0; float r2 = dot(c, c); if (r2 > 1.0) discard;
                      gl_FragColor = vec4(vColor * (0.35 + 0.65 * sqrt(1.0 - r2)), 1.0); }`,
    });
    this.points = new THREE.Points(geo, material);
    this.points.frustumCulled = false;
    this.points.userData.n = n;
    this.world.add(this.points);
  }

  resize() {
    const w = this.container.clientWidth || 640, h = this.container.clientHeight || 480;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.dirty = true;
  }

  ensureGrains(n) {
    if (this.grains && this.grains.count === n && this.capacity >= n) return;
    if (this.grains) { this.world.remove(this.grains); this.grains.dispose(); }
    this.capacity = Math.max(n, 1);
    this.grains = new THREE.InstancedMesh(n > 2000 ? this.coarse : this.sphere, this.material, this.capacity);
    this.grains.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
    this.grains.castShadow = this.look.shadows;
    this.grains.receiveShadow = this.look.shadows;
    this.grains.count = n;
    this.grains.frustumCulled = false;
    this.world.add(this.grains);
  }

  update(decoder) {
    const n = decoder.count;
    const p = decoder.positions, r = decoder.radius, shade = decoder.shade;
    // a scene without a floor (or water in its tank) has no fixed place to look at: frame the
    // particles once, at the first keyframe; the user's own camera moves stay after that
    if (!this.framed && (this.look.framed || !Number.isFinite(decoder.geometry?.floorY))) this.frame(p, n, decoder.geometry);
    this.turnDrum(decoder.t);
    if (this.quality === 0) {
      this.ensurePoints(n);
      const g = this.points.geometry, pos = g.attributes.position, col = g.attributes.color, size = g.attributes.size;
      pos.array.set(p.subarray(0, 3 * n));
      for (let k = 0; k < n; k++) {
        this.color.copy(this.slow).lerp(this.fast, shade[k] / 255);
        col.array[3 * k] = this.color.r; col.array[3 * k + 1] = this.color.g; col.array[3 * k + 2] = this.color.b;
        size.array[k] = 2 * Math.max(r[k], this.minRadius);
      }
      pos.needsUpdate = col.needsUpdate = size.needsUpdate = true;
      const h = this.renderer.domElement.height;
      this.points.material.uniforms.scale.value = h / (2 * Math.tan((this.camera.fov * Math.PI) / 360));
      this.setGeometry(decoder.geometry, this.top(p, n));
      this.dirty = true;
      return;
    }
    this.ensureGrains(n);
    for (let k = 0; k < n; k++) {
      const s = Math.max(r[k], this.minRadius);
      this.matrix.makeScale(s, s, s).setPosition(p[3 * k], p[3 * k + 1], p[3 * k + 2]);
      this.grains.setMatrixAt(k, this.matrix);
      this.color.copy(this.slow).lerp(this.fast, shade[k] / 255);
      this.grains.setColorAt(k, this.color);
    }
    this.grains.instanceMatrix.needsUpdate = true;
    if (this.grains.instanceColor) this.grains.instanceColor.needsUpdate = true;
    this.setGeometry(decoder.geometry, this.top(p, n));
    this.dirty = true;
  }

  // A drum's cap turns at the drum's speed over the simulated time since the last picture (none
  // for a step back in time: a new run, a reset).
  turnDrum(t) {
    const dt = Number.isFinite(t) && Number.isFinite(this.drumT) && t > this.drumT ? t - this.drumT : 0;
    this.drumT = t;
    if (!this.drum) return;
    this.drumAngle = ((this.drumAngle || 0) + this.drum.w * dt) % (2 * Math.PI);
    this.drum.cap.rotation.z = this.drumAngle;
    this.dirty = true;
  }

  // The scene's geometry; `top` (the particles' highest y) sizes the walls of a water tank.
  setGeometry(g, top) {
    if (!g) return;
    const key = JSON.stringify(g); // infinities read as null: still one key per geometry
    if (key === this.geometryKey) return;
    this.geometryKey = key;
    this.world.rotation.z = Number.isFinite(g.tilt) ? -g.tilt : 0;
    this.statics.clear();
    const glass = new THREE.MeshStandardMaterial({ color: 0x88aacc, transparent: true, opacity: 0.18, side: THREE.DoubleSide, depthWrite: false });
    const solid = new THREE.MeshStandardMaterial({ color: 0x6b7a8c, side: THREE.DoubleSide });
    const finite = (v, d) => (Number.isFinite(v) ? v : d);
    // no floor at all (N-body: floor_y is −infinity): nothing to stand on, nothing to drag on
    const hasFloor = Number.isFinite(g.floorY);
    this.floorY = hasFloor ? g.floorY : 0;
    const x0 = finite(g.floor[0], -12), x1 = finite(g.floor[1], 12), z0 = finite(g.floor[2], -12), z1 = finite(g.floor[3], 12);
    if (hasFloor) {
      const floor = new THREE.Mesh(new THREE.PlaneGeometry(x1 - x0, z1 - z0), new THREE.MeshStandardMaterial({ color: 0x4a5361 }));
      floor.rotation.x = -Math.PI / 2;
      floor.position.set((x0 + x1) / 2, g.floorY, (z0 + z1) / 2);
      floor.receiveShadow = true;
      this.statics.add(floor);
    }
    if (g.box && hasFloor) {
      // grains: walls well above any pile; water: a tank a little higher than the water stands
      const water = this.look.tank && Number.isFinite(top);
      const bx0 = finite(g.boxX0, x0), bx1 = finite(g.boxX1, x1), bz0 = finite(g.boxZ0, z0), bz1 = finite(g.boxZ1, z1);
      const h = water ? Math.max(1.25 * (top - g.floorY), 0.1) : 2.5;
      const wall = (w, px, pz, ry) => {
        const m = new THREE.Mesh(new THREE.PlaneGeometry(w, h), glass);
        m.position.set(px, g.floorY + h / 2, pz);
        m.rotation.y = ry;
        this.statics.add(m);
      };
      if (Number.isFinite(g.boxX0)) wall(bz1 - bz0, bx0, (bz0 + bz1) / 2, Math.PI / 2);
      if (Number.isFinite(g.boxX1)) wall(bz1 - bz0, bx1, (bz0 + bz1) / 2, Math.PI / 2);
      if (Number.isFinite(g.boxZ0)) wall(bx1 - bx0, (bx0 + bx1) / 2, bz0, 0);
      if (Number.isFinite(g.boxZ1)) wall(bx1 - bx0, (bx0 + bx1) / 2, bz1, 0);
    }
    if (g.siloR > 0) {
      const top = g.plate ? g.plateY + 6 : g.floorY + 6, bottom = g.plate ? g.plateY : g.floorY;
      const wall = new THREE.Mesh(new THREE.CylinderGeometry(g.siloR, g.siloR, top - bottom, 48, 1, true), glass);
      wall.position.y = (top + bottom) / 2;
      this.statics.add(wall);
    }
    if (g.plate) {
      const ring = new THREE.Mesh(new THREE.RingGeometry(g.plugged ? 0.001 : g.holeR, Math.max(g.siloR, g.holeR + 0.5), 48), solid);
      ring.rotation.x = -Math.PI / 2;
      ring.position.y = g.plateY;
      ring.receiveShadow = true;
      this.statics.add(ring);
    }
    if (g.dam) {
      const dam = new THREE.Mesh(new THREE.PlaneGeometry(finite(g.boxZ1, 1) - finite(g.boxZ0, -1), 3), solid);
      dam.rotation.y = Math.PI / 2;
      dam.position.set(g.damX, g.damEdge + 1.5, (finite(g.boxZ0, -1) + finite(g.boxZ1, 1)) / 2);
      this.statics.add(dam);
    }
    this.drum = null;
    if (g.drumR > 0) {
      // a horizontal drum: its wall as glass, and on its far end cap a rim and spokes that turn
      // with it (update() turns them by drumW over the frames' time)
      const z0 = finite(g.boxZ0, -g.drumR), z1 = finite(g.boxZ1, g.drumR);
      const wall = new THREE.Mesh(new THREE.CylinderGeometry(g.drumR, g.drumR, z1 - z0, 64, 1, true), glass);
      wall.rotation.x = Math.PI / 2;
      wall.position.set(0, g.drumY, (z0 + z1) / 2);
      this.statics.add(wall);
      const cap = new THREE.Group();
      cap.add(new THREE.Mesh(new THREE.RingGeometry(0.96 * g.drumR, g.drumR, 64), solid));
      for (let k = 0; k < 3; k++) {
        const spoke = new THREE.Mesh(new THREE.PlaneGeometry(2 * g.drumR, 0.04 * g.drumR), solid);
        spoke.rotation.z = (k * Math.PI) / 3;
        cap.add(spoke);
      }
      cap.position.set(0, g.drumY, z0);
      cap.rotation.z = this.drumAngle || 0;
      this.statics.add(cap);
      this.drum = { cap, w: Number.isFinite(g.drumW) ? g.drumW : 0 };
    }
    if (g.tool) {
      const tool = new THREE.Mesh(new THREE.SphereGeometry(g.toolR, 32, 16), new THREE.MeshStandardMaterial({ color: 0x5aa9ff }));
      tool.position.set(g.toolX, g.toolY, g.toolZ);
      tool.castShadow = true;
      this.statics.add(tool);
    }
  }

  // The water's highest point at the first keyframe: the height of its tank's walls.
  top(p, n) {
    if (!this.look.tank) return NaN;
    if (this.tankTop === undefined && n > 0) {
      let y = -Infinity;
      for (let k = 0; k < n; k++) y = Math.max(y, p[3 * k + 1]);
      this.tankTop = y;
    }
    return this.tankTop;
  }

  showChains(info, decoder) {
    if (this.chains) { this.world.remove(this.chains); this.chains.geometry.dispose(); this.chains = null; }
    if (!info || info.count === 0) return;
    const p = decoder.positions, pos = new Float32Array(6 * info.count), col = new Float32Array(6 * info.count);
    let max = 0;
    for (let k = 0; k < info.count; k++) max = Math.max(max, info.force[k]);
    for (let k = 0; k < info.count; k++) {
      const a = info.a[k], b = info.b[k], w = info.force[k] / (max || 1);
      pos.set([p[3 * a], p[3 * a + 1], p[3 * a + 2], p[3 * b], p[3 * b + 1], p[3 * b + 2]], 6 * k);
      col.set([1, 1 - w, 0.2, 1, 1 - w, 0.2], 6 * k);
    }
    const geo = new THREE.BufferGeometry();
    geo.setAttribute('position', new THREE.BufferAttribute(pos, 3));
    geo.setAttribute('color', new THREE.BufferAttribute(col, 3));
    this.chains = new THREE.LineSegments(geo, new THREE.LineBasicMaterial({ vertexColors: true, depthTest: false }));
    this.chains.renderOrder = 2;
    this.world.add(this.chains);
    this.dirty = true;
  }

  // The floor point (x, z) under a pointer event, or null.
  floorPoint(event) {
    const rect = this.renderer.domElement.getBoundingClientRect();
    const ndc = new THREE.Vector2(((event.clientX - rect.left) / rect.width) * 2 - 1, -((event.clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(ndc, this.camera);
    const plane = new THREE.Plane(new THREE.Vector3(0, 1, 0), -this.floorY);
    const hit = new THREE.Vector3();
    return this.raycaster.ray.intersectPlane(plane, hit) ? { x: hit.x, z: hit.z } : null;
  }
}
